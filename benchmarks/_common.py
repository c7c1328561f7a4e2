"""What the benchmark scripts share: scoring on the seven STS tasks, and reading/writing their results.

A benchmark keeps its rows as plain dicts while it runs (one key names the row, ``sts`` holds
its scores, the rest are details); on disk they are a :class:`~pcctune.results.BenchmarkResult`
(``runs.json``) and a markdown :class:`~pcctune.evaluation.tables.ScoreTable` (``table.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from pcctune.data.tasks import SEVEN_TASKS
from pcctune.evaluation.sts import evaluate_sts
from pcctune.evaluation.tables import ScoreTable
from pcctune.io import write_text
from pcctune.provenance import library_versions
from pcctune.results import BenchmarkResult, BenchmarkRow

STS_COLUMNS = [*SEVEN_TASKS, "avg"]


def sts_scores(model, tasks, dtype: str) -> dict[str, float]:
    """The seven STS numbers + avg of ``model``, encoded in ``dtype`` (``fp32`` or ``bf16``)."""
    if dtype == "bf16":
        model.to(torch.bfloat16)
    per_task, avg = evaluate_sts(model, tasks, show_progress=False)
    return {s.name: s.spearman for s in per_task} | {"avg": avg}


def to_record(
    name: str, rows: list[dict[str, Any]], label_key: str, settings: str = "", details: dict[str, Any] | None = None
) -> BenchmarkResult:
    records = [
        BenchmarkRow(
            label=str(row[label_key]), sts=row.get("sts") or {}, details={k: v for k, v in row.items() if k != "sts"}
        )
        for row in rows
    ]
    return BenchmarkResult(
        name=name, settings=settings, versions=library_versions(), rows=records, details=details or {}
    )


def load_rows(path: Path) -> tuple[list[dict[str, Any]], BenchmarkResult | None]:
    """A benchmark's saved rows as dicts (details + ``sts``) and its record; nothing if the file is absent."""
    if not path.is_file():
        return [], None
    record = BenchmarkResult.from_disk(path)
    return [{**row.details, **({"sts": row.sts} if row.sts else {})} for row in record.rows], record


def save_rows(
    output: Path,
    name: str,
    rows: list[dict[str, Any]],
    label_key: str,
    settings: str = "",
    details: dict[str, Any] | None = None,
) -> Path:
    return to_record(name, rows, label_key, settings, details).to_disk(output / "runs.json")


def write_results(
    output: Path,
    name: str,
    table: ScoreTable,
    settings: str,
    rows: list[dict[str, Any]],
    label_key: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Print the markdown table and its settings; save them as table.md and runs.json."""
    markdown = table.to_markdown()
    print(markdown)
    print(settings)
    write_text(output / "table.md", markdown + "\n\n" + settings + "\n")
    save_rows(output, name, rows, label_key, settings, details)
