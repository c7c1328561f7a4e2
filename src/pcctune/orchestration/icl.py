"""``pcctune icl``: choose an in-context demonstration on a dev set and save the model with it.

With ``--output``, each candidate's dev score is kept in pcctune's cache as it lands (``resume/icl-KEY``, keyed by
the model, its files, the template, the dtype, the dev set and the library versions; never in the user's folders),
so the same command run after an interrupt scores only the candidates still missing (a search of a 135M decoder
takes half an hour on one core here). A kept file that cannot be read or was made by another search is set aside
with a warning.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from sentence_transformers import SentenceTransformer

from pcctune.cache_entry import remove, resume_folder, set_aside, writing
from pcctune.data.cache import senteval_folder
from pcctune.data.dev import dev_parts
from pcctune.errors import PcctuneError
from pcctune.evaluation.demonstrations import CandidateScore, rank_demonstrations
from pcctune.io import atomic_folder, check_output_folder, write_json
from pcctune.modeling.build import build_model, is_decoder_only
from pcctune.modeling.fingerprint import computation_key
from pcctune.modeling.saving import save_native
from pcctune.modeling.template import apply_template, input_module
from pcctune.seeding import check_seed


def candidates_table(results: list[CandidateScore], title: str) -> Table:
    """The demonstrations ranked by dev score, best first, as the search printed them."""
    table = Table(title=title)
    for column in ("rank", "sentence", "word", "dev"):
        table.add_column(column)
    for rank, r in enumerate(results, start=1):
        table.add_row(
            str(rank), r.demonstration.sentence or "(no demonstration)", r.demonstration.word, f"{r.dev_spearman:.2f}"
        )
    return table


logger = logging.getLogger(__name__)


class KeptScores:
    """The dev scores of a search so far, in ``path``, valid for the search whose settings hash to ``key``."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        self.scores: dict[str, float] = {}
        if not path.is_file():
            return
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            scores = {str(t): float(v) for t, v in saved["scores"].items()} if saved["key"] == key else None
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
            set_aside(path, f"unreadable kept scores: {type(error).__name__}: {error}")
            return
        if scores is None:
            set_aside(path, "kept scores of another search (other settings or model files)")
            return
        self.scores = scores
        logger.info("continuing an interrupted search: %d candidates scored in %s", len(scores), path)

    def add(self, template: str, score: float) -> None:
        """Keep ``template``'s score and write every score so far to disk, so that an interrupted search continues from
        here."""
        self.scores[template] = score
        write_json({"key": self.key, "scores": self.scores}, self.path)


@contextlib.contextmanager
def kept_scores(
    output: Path | None, settings: dict[str, Any], encoder: SentenceTransformer
) -> Iterator[KeptScores | None]:
    """With ``--output``, the search's scores so far, in pcctune's cache until the model is saved; keyed by the
    search's ``settings`` (its dev pairs included), ``encoder`` as loaded and the code and machine
    (`pcctune.modeling.fingerprint`). A model that cannot be digested keeps no scores."""
    key = computation_key(settings, encoder, __name__) if output is not None else None
    if key is None:
        yield None
        return
    with resume_folder(f"icl-{key[:24]}", f"pcctune icl {settings['model']} --output {output}") as folder:
        kept = None if folder is None else KeptScores(folder / "scores.json", key)
        yield kept
        if folder is not None:
            remove(folder)


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
    """Score ``candidates`` demonstrations (and none) on ``dev``; save the best with the model to ``output``
    (which no other command writes meanwhile)."""
    check_seed(seed)
    if output is not None:
        check_output_folder(output)
    with writing(output) if output is not None else contextlib.nullcontext():
        senteval = senteval_folder(data)
        parts = dev_parts(dev, senteval)
        encoder = build_model(model, template=template, dtype=dtype)
        if not is_decoder_only(input_module(encoder).model.config):
            raise PcctuneError(
                f"pcctune icl needs a causal language model (a decoder that writes the demonstration's word); "
                f"{model} is a {input_module(encoder).model.config.model_type} encoder"
            )
        dev_pairs = {name: [(p.sentence1, p.sentence2, p.score) for p in pairs] for name, pairs in parts.items()}
        settings = {"model": model, "template": template, "dtype": dtype, "dev": dev, "dev_pairs": dev_pairs}
        with kept_scores(output, settings, encoder) as kept:
            results = rank_demonstrations(
                encoder, senteval, candidates, seed, parts, kept.scores if kept else None, kept.add if kept else None
            )
            console.print(candidates_table(results, f"demonstrations for {model} on {dev} (Spearman × 100, dev only)"))
            if output is not None:
                save_best(encoder, results, {"model": model, "dev": dev}, output)
                console.print(f"model with the best demonstration -> {output}")
    return results


def save_best(
    encoder: SentenceTransformer, results: list[CandidateScore], search: dict[str, str], output: Path
) -> None:
    """The model with the best candidate's template, and every candidate's dev score beside it."""
    apply_template(encoder, results[0].template)
    candidates = [
        {"sentence": r.demonstration.sentence, "word": r.demonstration.word, "dev_spearman": r.dev_spearman}
        for r in results
    ]
    with atomic_folder(output) as staging:
        save_native(encoder, staging)
        record = search | {"chosen_template": results[0].template, "candidates": candidates}
        write_json(record, staging / "demonstration_search.json")
