"""``pcctune report``: result files → markdown tables (with deltas) and plots.

Reads ``pcctune eval`` records (``{"sts": {task: ρ}, "transfer": {...}}``) and
``pcctune train`` results (``{"sts": {run: {task: ρ}}}``), from files or run folders.
"""

from __future__ import annotations

import json
from pathlib import Path

from pcctune.plotting import plt, save_figure
import numpy as np

from pcctune.errors import PcctuneError
from pcctune.evaluation.record import SHORT_NAMES


def _result_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        if (path / "results.json").is_file():
            return [path / "results.json"]
        files = sorted(path.glob("*.json"))
        if files:
            return files
    raise PcctuneError(f"no result JSON at {path}")


def collect_runs(paths: list[Path]) -> dict[str, dict[str, dict[str, float]]]:
    """``{run label: {"sts": {...}, "transfer": {...}}}`` from every given file or folder."""
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for path in paths:
        for file in _result_files(path):
            try:
                record = json.loads(file.read_text())
            except json.JSONDecodeError as error:
                raise PcctuneError(f"{file}: not JSON ({error.msg})") from None
            sts = record.get("sts")
            if isinstance(sts, dict) and sts and all(isinstance(v, dict) for v in sts.values()):
                prefix = record.get("config", {}).get("model", file.parent.name)
                for label, values in sts.items():
                    runs[f"{prefix}: {label}"] = {"sts": values}
            elif isinstance(sts, dict) or "transfer" in record:
                label = record.get("model", file.stem)
                if label in runs:
                    label = f"{label} ({file.stem})"
                runs[label] = {k: record[k] for k in ("sts", "transfer") if k in record}
            else:
                raise PcctuneError(f"{file}: no 'sts' or 'transfer' results in it")
    return runs


def markdown_table(runs: dict[str, dict[str, dict[str, float]]], section: str, deltas: bool = True) -> str:
    """One row per run; with ``deltas``, each later run also shows its difference to the first."""
    rows = {label: r[section] for label, r in runs.items() if section in r}
    if not rows:
        return ""
    columns = list(next(iter(rows.values())))
    header = "| run | " + " | ".join(SHORT_NAMES.get(c, c) for c in columns) + " |"
    lines = [header, "|" + " --- |" * (len(columns) + 1)]
    first = next(iter(rows.values()))
    for index, (label, values) in enumerate(rows.items()):
        cells = []
        for column in columns:
            value = values.get(column)
            cell = "—" if value is None else f"{value:.2f}"
            if deltas and index > 0 and value is not None and first.get(column) is not None:
                cell += f" ({value - first[column]:+.2f})"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bar_plot(runs: dict[str, dict[str, dict[str, float]]], section: str, path: Path) -> Path:
    """Grouped bars: one group per task, one bar per run."""
    rows = {label: r[section] for label, r in runs.items() if section in r}
    columns = list(next(iter(rows.values())))
    x = np.arange(len(columns))
    width = 0.8 / len(rows)
    figure, ax = plt.subplots(figsize=(max(7, len(columns) * 1.1), 4))
    for index, (label, values) in enumerate(rows.items()):
        ax.bar(x + (index - (len(rows) - 1) / 2) * width, [values.get(c, np.nan) for c in columns], width, label=label)
    ax.set_xticks(x, [SHORT_NAMES.get(c, c) for c in columns], rotation=20)
    low = min(v for values in rows.values() for v in values.values())
    ax.set(ylim=(max(0, low - 10), 100), ylabel="Spearman × 100" if section == "sts" else "accuracy",
           title=f"{section.upper()} per task")
    ax.legend(fontsize=8)
    return save_figure(figure, path)


def scatter_plot(cosines: np.ndarray, gold: np.ndarray, title: str, path: Path) -> Path:
    """Predicted cosine against gold score for every pair of one task."""
    from scipy.stats import spearmanr

    figure, ax = plt.subplots(figsize=(5, 4.2))
    ax.scatter(gold, cosines, s=4, alpha=0.35)
    rho = spearmanr(cosines, gold).statistic * 100
    ax.set(xlabel="gold score", ylabel="cosine similarity", title=f"{title} (Spearman × 100 = {rho:.2f})")
    return save_figure(figure, path)


def model_scatter(model_spec: str, task_name: str, senteval_dir: Path, path: Path) -> Path:
    """Encode one STS task with a model and plot its cosines against the gold scores."""
    from pcctune.data.senteval import load_task
    from pcctune.evaluation.sts import cosine_rows, encode_unique, senteval_text
    from pcctune.modeling.build import build_model

    task = load_task(senteval_dir, task_name)
    texts = [senteval_text(s) for p in task.pairs for s in (p.sentence1, p.sentence2)]
    vectors = encode_unique(build_model(model_spec), texts)
    a = np.stack([vectors[senteval_text(p.sentence1)] for p in task.pairs])
    b = np.stack([vectors[senteval_text(p.sentence2)] for p in task.pairs])
    gold = np.array([p.score for p in task.pairs])
    return scatter_plot(cosine_rows(a, b), gold, f"{model_spec} on {task_name}", path)
