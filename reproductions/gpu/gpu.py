"""The decoder recipe on a GPU gives the CPU's numbers: seed 1 of ``configs/paper_recipe_smollm2_cpu.yaml``
(PromptEOL, both stages at the recipe's full budget, 91 and 84 steps) trained where this runs, against the same
seed's records on the CPU (``reproductions/decoder_full/records``).

The run is the templates claim's first row (its script, its flags: ``--templates eol --stage1-steps 91
--stage2-steps 84``); its record is ``runs.json`` here. The table sets its zero-shot, stage-1 and stage-2 averages
(papers' protocol, seven full test sets) and its stage times beside the CPU's.

``--quick`` trains the row on a tiny Llama for two steps a stage and compares it with the committed CPU records.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reproductions._common import Measured, Rows, claim
from reproductions.templates import templates

from pcctune.results import RunResult

CPU = Path("reproductions/decoder_full/records")
PHASES = {
    "before": ("zero-shot PromptEOL", "zero_shot_paper", None),
    "stage 1": ("stage 1", "seed1", "contrastive-nli"),
}
PHASES["stage 2"] = ("stage 1 + Pcc", "seed1", "pcc-pearson")


def measure(args: argparse.Namespace) -> Measured:
    return templates.measure(args)


def cpu_average(record: str, stage: str | None) -> float:
    from pcctune.results import EvalResult, load_result

    result = load_result(CPU / f"{record}.json")
    if isinstance(result, EvalResult):
        assert result.sts is not None
        return result.sts["avg"]
    assert isinstance(result, RunResult) and stage is not None
    return result.sts_by_stage[stage]["avg"]


def table(rows: Rows, details: dict[str, Any]) -> str:
    lines = ["| row | this run | CPU | difference |", "| --- | --- | --- | --- |"]
    for row in rows:
        for phase, (label, record, stage) in PHASES.items():
            here, cpu = row["scores"][phase]["avg"], cpu_average(record, stage)
            lines.append(f"| {row['label']}: {label} | {here:.4f} | {cpu:.4f} | {here - cpu:+.4f} |")
        seconds = ", ".join(f"{stage} {value:.0f} s" for stage, value in row["stage_seconds"].items())
        lines += ["", f"stage times of this run: {seconds}"]
    return "\n".join(lines)


def arguments(parser: argparse.ArgumentParser) -> None:
    templates.arguments(parser)
    parser.set_defaults(templates=["eol"], stage1_steps=91, stage2_steps=84, runs=Path("runs/gpu"))


QUICK = templates.QUICK | {"templates": ["eol"]}  # --quick: the row on a tiny Llama
BENCHMARK = claim(__name__, quick=QUICK)
