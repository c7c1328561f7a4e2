"""``pcctune report``: result records → a markdown report with tables (deltas to the first run) and plots."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pcctune.correlation import pair_cosines
from pcctune.data.tasks import load_task
from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import senteval_text
from pcctune.evaluation.report import bar_plot, scatter_plot
from pcctune.evaluation.tables import ScoreTable, interval_table
from pcctune.io import check_output_folder, write_text
from pcctune.orchestration.run_folder import RESULTS
from pcctune.results import AnyResult, EvalResult, RunResult, TaskScore, load_result

Section = dict[str, dict[str, float]]
SECTIONS = (("sts", "STS (Spearman × 100; deltas vs the first row)"), ("transfer", "Transfer (accuracy)"))


def result_files(path: Path) -> list[Path]:
    """A result file, a run folder's ``results.json``, or every JSON of a folder."""
    if path.is_file():
        return [path]
    if path.is_dir():
        if (path / RESULTS).is_file():
            return [path / RESULTS]
        files = sorted(path.glob("*.json"))
        if files:
            return files
    raise PcctuneError(f"no result JSON at {path}")


def load_records(paths: list[Path]) -> list[tuple[Path, AnyResult]]:
    """Every result record of the files and folders given, with its file."""
    return [(file, load_result(file)) for path in paths for file in result_files(path)]


def runs_of(records: list[tuple[Path, AnyResult]]) -> dict[str, Section]:
    """``{run label: {"sts": {...}, "transfer": {...}}}`` from every eval or run record read (``load_records``)."""
    runs: dict[str, Section] = {}
    for file, record in records:
        if isinstance(record, RunResult):
            prefix = str(record.config.get("model", file.parent.name))
            for label, values in record.sts_by_stage.items():
                runs[f"{prefix}: {label}"] = {"sts": values}
        elif isinstance(record, EvalResult) and record.sections():
            runs[eval_label(record, file, runs)] = record.sections()
        else:
            raise PcctuneError(f"{file}: no 'sts' or 'transfer' results in it")
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
    return {label: r[section] for label, r in runs.items() if section in r}


def model_scatter(model_spec: str, task_name: str, senteval_dir: Path, path: Path) -> Path:
    """Encode one STS task with a model and plot its cosines against the gold scores."""
    from pcctune.modeling.build import build_model  # here: a report without a scatter needs no model library
    from pcctune.modeling.encoding import encode_unique

    task = load_task(senteval_dir, task_name)
    texts = [senteval_text(s) for p in task.pairs for s in (p.sentence1, p.sentence2)]
    vectors = encode_unique(build_model(model_spec), texts)
    cosines, gold = pair_cosines(vectors, task.pairs, senteval_text)
    return scatter_plot(cosines, gold, f"{model_spec} on {task_name}", path)


def write_report(paths: list[Path], output: Path, scatter: tuple[str, str, Path] | None = None) -> str:
    """Write ``output/report.md`` with a table and a bar plot per section (and a scatter plot); return it."""
    check_output_folder(output)
    records = load_records(paths)
    runs = runs_of(records)
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
    if scatter is not None:
        model, task, senteval = scatter
        plot = model_scatter(model, task, senteval, output / "scatter.png")
        parts += ["## Predicted vs gold", "", f"![scatter]({plot.name})", ""]
    text = "\n".join(parts)
    write_text(output / "report.md", text)
    return text
