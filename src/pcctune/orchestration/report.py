"""``pcctune report``: result records → a markdown report with tables (deltas to the first run) and plots, and the
tables and verdicts of the comparison records among them (``pcctune compare --output``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pcctune.correlation import pair_cosines
from pcctune.data.tasks import load_task
from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import senteval_text
from pcctune.evaluation.report import bar_plot, scatter_plot
from pcctune.evaluation.tables import ScoreTable, interval_table
from pcctune.io import check_output_folder, write_text
from pcctune.orchestration.compare import comparison_markdown
from pcctune.orchestration.compare_family import family_markdown
from pcctune.orchestration.records import load_records
from pcctune.results import (
    AnyResult,
    BenchmarkResult,
    CompareResult,
    EvalResult,
    FamilyResult,
    RunResult,
    TaskScore,
)

Section = dict[str, dict[str, float]]
SECTIONS = (("sts", "STS (Spearman × 100; deltas vs the first row)"), ("transfer", "Transfer (accuracy)"))


def runs_of(records: list[tuple[Path, AnyResult]]) -> dict[str, Section]:
    """``{run label: {"sts": {...}, "transfer": {...}}}`` from every eval or run record read (``load_records``), and
    every scored row of a benchmark record (a sweep's ``sweep.json``: its winner's seed runs; a claim's
    ``runs.json``)."""
    runs: dict[str, Section] = {}
    for file, record in records:
        if isinstance(record, RunResult):
            prefix = str(record.config.get("model", file.parent.name))
            for label, values in record.sts_by_stage.items():
                runs[f"{prefix}: {label}"] = {"sts": values}
        elif isinstance(record, EvalResult) and record.sections():
            runs[eval_label(record, file, runs)] = record.sections()
        elif isinstance(record, BenchmarkResult) and any(row.sts for row in record.rows):
            runs |= {f"{record.name}: {row.label}": {"sts": row.sts} for row in record.rows if row.sts}
        elif not isinstance(record, CompareResult | FamilyResult):  # each its own section: comparison_sections
            raise PcctuneError(f"{file}: no 'sts' or 'transfer' results and no comparison in it")
    return runs


def eval_label(record: EvalResult, file: Path, taken: Mapping[str, object]) -> str:
    """An eval record's row label: its model, and its file's name where that model already has a row."""
    return record.model if record.model not in taken else f"{record.model} ({file.stem})"


def collect_intervals(records: list[tuple[Path, AnyResult]]) -> dict[str, list[TaskScore]]:
    """``{run label: scores}`` of every eval record whose scores carry a bootstrap interval (a user's own pairs)."""
    found: dict[str, list[TaskScore]] = {}
    for file, record in records:
        if isinstance(record, EvalResult):
            scores = [s for s in record.sts_detail or [] if s.interval is not None]
            if scores:
                found[eval_label(record, file, found)] = scores
    return found


def section_rows(runs: dict[str, Section], section: str) -> dict[str, dict[str, float]]:
    """One section's scores (``sts``, ``transfer``…) of every run that has it, by run label."""
    return {label: r[section] for label, r in runs.items() if section in r}


def model_scatter(model_spec: str, task_name: str, senteval_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Encode one STS task with a model: its cosines and the gold scores, pair by pair."""
    from pcctune.modeling.build import build_model  # here: a report without a scatter needs no model library
    from pcctune.modeling.encoding import encode_unique

    task = load_task(senteval_dir, task_name)
    texts = [senteval_text(s) for p in task.pairs for s in (p.sentence1, p.sentence2)]
    vectors = encode_unique(build_model(model_spec), texts)
    cosines, gold = pair_cosines(vectors, task.pairs, senteval_text)
    return cosines, gold


def comparison_sections(records: list[tuple[Path, AnyResult]], output: Path) -> list[str]:
    """A section per ``pcctune compare`` record read: its sides, table and verdict (a family's forest drawn as
    ``family_<n>.png``)."""
    parts: list[str] = []
    families = 0
    for file, record in records:
        if isinstance(record, CompareResult):
            parts += comparison_markdown(record, file.name)
        elif isinstance(record, FamilyResult):
            families += 1
            parts += family_markdown(record, file.name, output / f"family_{families}.png")
    return parts


def write_report(paths: list[Path], output: Path, scatter: tuple[str, str, Path] | None = None) -> str:
    """Write ``output/report.md`` with a table and a bar plot per section, each comparison record's table and verdict
    (and a scatter plot); return it."""
    check_output_folder(output)
    records = load_records(paths)
    runs = runs_of(records)
    # the scatter's model and task are read before any file is written: a wrong one leaves nothing behind
    plotted = (f"{scatter[0]} on {scatter[1]}", model_scatter(*scatter)) if scatter is not None else None
    parts = ["# pcctune report", ""]
    for section, title in SECTIONS:
        rows = section_rows(runs, section)
        if rows:
            plot = bar_plot(rows, section, output / f"{section}_bars.png")
            table = ScoreTable.from_rows(rows).to_markdown(deltas=True)
            parts += [f"## {title}", "", table, "", f"![{section}]({plot.name})", ""]
    for label, scores in collect_intervals(records).items():
        table = interval_table(scores, first_column="test set").to_markdown()
        parts += [f"## {label}: your pairs with their bootstrap intervals (× 100)", "", table, ""]
    parts += comparison_sections(records, output)
    if plotted is not None:
        title, (cosines, gold) = plotted
        plot = scatter_plot(cosines, gold, title, output / "scatter.png")
        parts += ["## Predicted vs gold", "", f"![scatter]({plot.name})", ""]
    text = "\n".join(parts)
    write_text(output / "report.md", text)
    return text
