"""``pcctune icl``: choose an in-context demonstration on a dev set and save the model with it."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from pcctune.data.dev import dev_parts
from pcctune.errors import PcctuneError
from pcctune.evaluation.demonstrations import CandidateScore, rank_demonstrations
from pcctune.io import atomic_folder, check_output_folder, write_json
from pcctune.modeling.build import build_model, is_decoder_only
from pcctune.modeling.saving import save_native
from pcctune.modeling.template import input_module
from pcctune.paths import resolve_senteval_dir


def candidates_table(results: list[CandidateScore], title: str) -> Table:
    table = Table(title=title)
    for column in ("rank", "sentence", "word", "dev"):
        table.add_column(column)
    for rank, r in enumerate(results, start=1):
        table.add_row(
            str(rank), r.demonstration.sentence or "(no demonstration)", r.demonstration.word, f"{r.dev_spearman:.2f}"
        )
    return table


def run_icl(
    model: str,
    template: str,
    candidates: int,
    dev: str,
    dtype: str,
    seed: int,
    data: Path | None,
    output: Path | None,
    console: Console,
) -> list[CandidateScore]:
    """Score ``candidates`` demonstrations (and none) on ``dev``; save the best with the model to ``output``."""
    if output is not None:
        check_output_folder(output)
    senteval = resolve_senteval_dir(data)
    parts = dev_parts(dev, senteval)
    encoder = build_model(model, template=template, dtype=dtype)
    if not is_decoder_only(input_module(encoder).model.config):
        raise PcctuneError(
            f"pcctune icl needs a causal language model (a decoder that writes the demonstration's word); "
            f"{model} is a {input_module(encoder).model.config.model_type} encoder"
        )
    results = rank_demonstrations(encoder, senteval, candidates, seed, parts)
    console.print(candidates_table(results, f"demonstrations for {model} on {dev} (Spearman × 100, dev only)"))
    if output is not None:
        input_module(encoder).template = results[0].template
        with atomic_folder(output) as staging:
            save_native(encoder, staging)
            write_json(
                {
                    "model": model,
                    "dev": dev,
                    "chosen_template": results[0].template,
                    "candidates": [
                        {
                            "sentence": r.demonstration.sentence,
                            "word": r.demonstration.word,
                            "dev_spearman": r.dev_spearman,
                        }
                        for r in results
                    ],
                },
                staging / "demonstration_search.json",
            )
        console.print(f"model with the best demonstration -> {output}")
    return results
