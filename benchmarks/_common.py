"""What the benchmark scripts share: scoring a model on the seven STS tasks and writing the results."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from pcctune.evaluation.record import library_versions
from pcctune.evaluation.sts import evaluate_sts


def sts_scores(model, tasks, dtype: str) -> dict:
    """The seven STS numbers + avg of ``model``, encoded in ``dtype`` (``fp32`` or ``bf16``)."""
    if dtype == "bf16":
        model.to(torch.bfloat16)
    per_task, avg = evaluate_sts(model, tasks, show_progress=False)
    return {s.name: s.spearman for s in per_task} | {"avg": avg}


def write_results(output: Path, lines: list[str], settings: str, payload: dict) -> None:
    """Print the markdown table and its settings; save them as table.md and runs.json (with versions)."""
    table = "\n".join(lines)
    print(table)
    print(settings)
    (output / "table.md").write_text(table + "\n\n" + settings + "\n")
    (output / "runs.json").write_text(json.dumps({**payload, "settings": settings, "versions": library_versions()},
                                                 indent=1))
