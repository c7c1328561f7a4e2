"""``pcctune report``: result records → a markdown report with tables (deltas to the first run) and plots, and the
tables and verdicts of the comparison records among them (``pcctune compare --output``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

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


class ReportRow(NamedTuple):
    """One row of the report's tables: its label, its scores by section, and the STS protocol and the prompt they
    were scored under, where its record keeps them (None otherwise)."""

    label: str
    sections: Section
    protocol: str | None = None
    prompt: str | None = None


def report_rows(records: list[tuple[Path, AnyResult]]) -> list[ReportRow]:
    """A row for every eval or run record read (``load_records``; a run: one per scored stage, its prompt the stage
    record's), and every scored row of a benchmark record (a sweep's ``sweep.json``: its winner's seed runs; a
    claim's ``runs.json``)."""
    rows: list[ReportRow] = []
    for file, record in records:
        if isinstance(record, RunResult):
            prefix = str(record.config.get("model", file.parent.name))
            prompts = {stage.stage: stage.prompt for stage in record.stages}
            rows += [
                ReportRow(f"{prefix}: {label}", {"sts": values}, record.protocol, prompts.get(label))
                for label, values in record.sts_by_stage.items()
            ]
        elif isinstance(record, EvalResult) and record.sections():
            label = eval_label(record, file, {row.label: row for row in rows})
            rows.append(ReportRow(label, record.sections(), record.protocol, record.prompt))
        elif isinstance(record, BenchmarkResult) and any(row.sts for row in record.rows):
            rows += [ReportRow(f"{record.name}: {row.label}", {"sts": row.sts}) for row in record.rows if row.sts]
        elif not isinstance(record, CompareResult | FamilyResult):  # each its own section: comparison_sections
            raise PcctuneError(f"{file}: no 'sts' or 'transfer' results and no comparison in it")
    return rows


def protocol_lines(rows: list[ReportRow]) -> list[str]:
    """Where the rows' STS scores were scored under different protocols, a paragraph naming each protocol's rows:
    a delta between two of them mixes the protocol with the model (``docs/evaluation.md``); else nothing."""
    by_protocol: dict[str, list[str]] = {}
    for row in rows:
        if row.protocol is not None and "sts" in row.sections:
            by_protocol.setdefault(row.protocol, []).append(row.label)
    if len(by_protocol) < 2:
        return []
    named = "; ".join(f"`{protocol}`: {', '.join(labels)}" for protocol, labels in by_protocol.items())
    return [
        f"These rows were scored under different STS protocols ({named}): a delta between rows of two protocols "
        "mixes the protocol with the model.",
        "",
    ]


def prompt_lines(rows: list[ReportRow]) -> list[str]:
    """Where any row's record names the prompt its model read before every sentence, a table of each row's prompt
    (``-``: none, or not recorded); else nothing."""
    if not any(row.prompt for row in rows):
        return []
    table = ["| row | prompt |", "| --- | --- |"]
    shown = {
        row.label: json.dumps(row.prompt, ensure_ascii=False).replace("|", "\\|") if row.prompt else "-" for row in rows
    }
    table += [f"| {label} | {prompt} |" for label, prompt in shown.items()]
    return ["## Prompts", "", "The prompt each row's model read before every sentence:", "", *table, ""]


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


def section_rows(rows: list[ReportRow], section: str) -> dict[str, dict[str, float]]:
    """One section's scores (``sts``, ``transfer``…) of every row that has it, by row label (a label given twice:
    its last row)."""
    return {row.label: row.sections[section] for row in rows if section in row.sections}


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
    report = report_rows(records)
    # the scatter's model and task are read before any file is written: a wrong one leaves nothing behind
    plotted = (f"{scatter[0]} on {scatter[1]}", model_scatter(*scatter)) if scatter is not None else None
    parts = ["# pcctune report", ""]
    for section, title in SECTIONS:
        rows = section_rows(report, section)
        if rows:
            plot = bar_plot(rows, section, output / f"{section}_bars.png")
            table = ScoreTable.from_rows(rows).to_markdown(deltas=True)
            parts += [f"## {title}", "", table, "", *(protocol_lines(report) if section == "sts" else [])]
            parts += [f"![{section}]({plot.name})", ""]
    parts += prompt_lines(report)
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
