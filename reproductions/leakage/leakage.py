"""Does Pcc-tuning's stage-2 gain survive a stricter leakage filter?

all-MiniLM-L6-v2, the ready config's stage 2 (configs/minilm_stage2.yaml: batch 32, 2 epochs, checkpoint
selected on SICK trial + STS-B dev with their test pairs removed), trained on the stage-2 set filtered at each
leakage level (pair, normalized, near, sentence: docs/leakage.md) with three losses: Pearson, the stage-2
contrastive baseline (Pcc-tuning §4.3) and cosine-MSE (sentence-transformers' best loss in the project's
stage-2 loss table); then all-mpnet-base-v2 with Pearson at ``pair`` and ``sentence``. Every run is scored on
the seven full test sets (SimCSE protocol).

    python -m reproductions leakage --rerun        # every missing run, in priority order; resumable
    python -m reproductions leakage --summarize    # table.md and leakage.png from runs.json

Each finished run leaves ``records/<run>.json`` (a :class:`~pcctune.results.RunResult`); a run whose record
exists is not trained again, and a run folder left by a killed run is resumed.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from reproductions._common import ROOT, Measured, Rows, claim, pair_counts

from pcctune.data.leakage import LEVELS, LeakageLevel
from pcctune.data.tasks import SEVEN_TASKS, SHORT_NAMES
from pcctune.evaluation.tables import mean_std_cell
from pcctune.results import RunResult
from pcctune.training.config import RunConfig

HERE = Path(__file__).resolve().parent
READY_CONFIG = HERE.parents[1] / "configs" / "minilm_stage2.yaml"
TASKS = list(SEVEN_TASKS)
SHORT = [SHORT_NAMES[task] for task in TASKS]
LOSSES = ("pearson", "contrastive", "cosine_mse")


@dataclass(frozen=True)
class Run:
    """One cell of the experiment: model, leakage level, loss, seed."""

    model: str
    level: LeakageLevel
    loss: str
    seed: int

    @property
    def name(self) -> str:
        short = "mpnet" if "mpnet" in self.model else "minilm"
        return f"{short}-{self.level.value}-{self.loss}-seed{self.seed}"


def plan() -> list[Run]:
    """Every run, in the order they are worth having: the sentence-disjoint cells first (they answer the
    question and are the cheapest: a tenth of the pairs), the baselines at ``pair``, more seeds where the
    sets are small, Pearson at the middle levels, MPNet, and the rest."""
    minilm, mpnet = "all-MiniLM-L6-v2", "all-mpnet-base-v2"
    pair, normalized, near, sentence = LEVELS
    order = [Run(minilm, sentence, loss, 1) for loss in LOSSES]
    order += [Run(minilm, pair, loss, 1) for loss in LOSSES[1:]]
    order += [Run(minilm, sentence, loss, seed) for seed in (2, 3) for loss in LOSSES]
    order += [Run(minilm, level, "pearson", 1) for level in (normalized, near)]
    order += [Run(mpnet, sentence, "pearson", 1)]
    order += [Run(minilm, level, loss, 1) for level in (normalized, near) for loss in LOSSES[1:]]
    order += [
        Run(minilm, level, loss, seed) for seed in (2, 3) for level in (pair, normalized, near) for loss in LOSSES
    ]
    order += [Run(mpnet, pair, "pearson", 1)]
    return [run for run in order if run.name not in BORROWED]


BORROWED = {"minilm-pair-pearson-seed1": HERE.parent / "minilm_stage2" / "records" / "ready.json"}
"""Cells whose run is already recorded elsewhere under the same settings: the ready config itself is the
Pearson run at ``pair``, seed 1 (its record also holds the base model's scores)."""


def config_of(run: Run, runs_dir: Path, model: str | None = None, data: str | None = None) -> RunConfig:
    """The ready config with the run's model, loss, seed and leakage level, on ``data`` (a SentEval folder; default:
    pcctune's lookup). ``model`` replaces the model and shrinks the budget to two steps (``--quick``)."""
    payload = yaml.safe_load(READY_CONFIG.read_text())
    stage = payload["stages"][0]
    stage["name"], stage["loss"] = run.loss, run.loss
    stage["data"]["leakage"] = run.level.value
    # MPNet's base scores come with its first run; MiniLM's are in the borrowed record
    first = run == Run("all-mpnet-base-v2", LeakageLevel.sentence, "pearson", 1)
    payload |= {"model": run.model, "seed": run.seed, "output_dir": str(runs_dir / run.name), "evaluate_before": first}
    payload |= {"data_dir": data} if data else {}
    if model:
        payload["model"] = model
        stage |= {"batch_size": 2, "epochs": 1, "max_steps": 2, "eval_steps": 1, "logging_steps": 1}
        stage |= {"dev": "sick-trial", "contrastive_threshold": 0.0}  # the tiny data has one pair above 4
    return RunConfig.model_validate(payload)


def train_missing(args: argparse.Namespace) -> None:
    """Train each planned run that has no record yet (at most ``--max-runs``), keeping each record as it lands."""
    from pcctune.orchestration.library import train
    from pcctune.orchestration.run_folder import holds_a_run

    records = args.output / "records"
    todo = [run for run in plan() if not (records / f"{run.name}.json").is_file()]
    todo = [run for run in todo if not args.only or run.name in args.only][: args.max_runs]
    for number, run in enumerate(todo, 1):
        print(f"[{number}/{len(todo)}] {run.name}", flush=True)
        config = config_of(run, args.runs, args.model, args.data)
        train(config, resume=holds_a_run(Path(config.output_dir))).to_disk(records / f"{run.name}.json")


def load_records(records: Path, borrowed: dict[str, Path]) -> dict[str, RunResult]:
    """The experiment's records by run name, the ``borrowed`` ones included."""
    found = {name: RunResult.from_disk(path) for name, path in borrowed.items() if path.is_file()}
    return found | {path.stem: RunResult.from_disk(path) for path in sorted(records.glob("*.json"))}


def row_of(name: str, result: RunResult) -> dict[str, Any]:
    """One run's table row: what it was, the scores after its stage, and what it cost."""
    model, level, loss, seed = name.split("-")
    scores = next(scores for label, scores in result.sts_by_stage.items() if label != "before")
    stage = result.stages[0]
    row = {"label": name, "model": model, "level": level, "loss": loss, "seed": int(seed.removeprefix("seed"))}
    row |= {"train_examples": stage.train_examples, "best_dev": stage.best_dev_spearman}
    row |= {"train_seconds": stage.wall_time_s, "pairs": pair_counts(result), "sts": scores}
    return row | ({"base": result.sts_by_stage["before"]} if "before" in result.sts_by_stage else {})


def measure(args: argparse.Namespace) -> Measured:
    borrowed = {} if args.quick else BORROWED  # --quick: tiny runs only, nothing of the real experiment
    if args.quick:
        args.runs = args.output / "runs"
    train_missing(args)
    results = load_records(args.output / "records", borrowed)
    rows = [row_of(name, result) for name, result in results.items()]
    sources = ", ".join(f"{name} from {path.relative_to(ROOT)}" for name, path in borrowed.items())
    settings = (
        "the ready config's stage 2 (configs/minilm_stage2.yaml) at each leakage level and loss; SimCSE protocol "
        f"on the seven full test sets; mean ± std over the seeds recorded; records of the same settings borrowed: "
        f"{sources or 'none'}"
    )
    return Measured(rows, settings)


def _cell(values: list[float], sign: str = "") -> str:
    """One value (``sign`` "+": signed), or the mean ± std of several."""
    if len(values) > 1:
        return ("+" if sign and statistics.mean(values) >= 0 else "") + mean_std_cell(values)
    return f"{values[0]:{sign}.2f}"


def table(rows: Rows, details: dict[str, Any]) -> str:
    """Per model, level and loss: train examples, seeds, the seven tasks and the average, and the gain over the
    base model."""
    base = {row["model"]: row["base"] for row in rows if "base" in row}
    header = ["model", "level", "loss", "train pairs", "seeds", *SHORT, "avg", "gain"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for model in ("minilm", "mpnet"):
        if model in base:
            cells = " | ".join(f"{base[model][task]:.2f}" for task in [*TASKS, "avg"])
            lines.append(f"| {model} | — | none (base model) | — | — | {cells} | — |")
        for level in LEVELS:
            for loss in LOSSES:
                group = [r for r in rows if (r["model"], r["level"], r["loss"]) == (model, level.value, loss)]
                if not group:
                    continue
                cells = " | ".join(_cell([r["sts"][task] for r in group]) for task in [*TASKS, "avg"])
                gain = _cell([r["sts"]["avg"] - base[model]["avg"] for r in group], "+") if model in base else "—"
                examples = "/".join(sorted({str(r["train_examples"]) for r in group}))
                lines.append(f"| {model} | {level.value} | {loss} | {examples} | {len(group)} | {cells} | {gain} |")
    return "\n".join(lines)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """all-MiniLM-L6-v2's average by leakage level, one line per loss (mean over seeds), the base model dotted."""
    from pcctune.plotting import plt, save_figure

    figure, ax = plt.subplots(figsize=(7, 4.2))
    for loss in LOSSES:
        points = []
        for x, level in enumerate(LEVELS):
            group = [
                r["sts"]["avg"] for r in rows if (r["model"], r["level"], r["loss"]) == ("minilm", level.value, loss)
            ]
            if group:
                points.append((x, statistics.mean(group)))
        if points:  # lines join neighbouring levels only: no line across a level not measured
            color = ax.plot(*zip(*points, strict=True), marker="o", ls="none", label=loss)[0].get_color()
            for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
                if x1 == x0 + 1:
                    ax.plot([x0, x1], [y0, y1], color=color)
    base = [row["base"]["avg"] for row in rows if row["model"] == "minilm" and "base" in row]
    if base:
        ax.axhline(base[0], ls=":", c="gray", label="base model")
    ax.set_xticks(range(len(LEVELS)), [level.value for level in LEVELS])
    ax.set(xlabel="leakage filter level", ylabel="avg Spearman × 100, 7 STS tasks", title="all-MiniLM-L6-v2 stage 2")
    ax.legend()
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", nargs="*", default=[], help="run only these runs (names as in records/)")
    parser.add_argument("--max-runs", type=int, default=None, help="stop after training this many runs")
    parser.add_argument("--runs", type=Path, default=Path("runs/leakage"), help="folder of the run folders")
    parser.add_argument("--model", default=None, help="replace every run's model (--quick: a tiny one)")


QUICK = {
    "model": "{bert}",
    "only": ["minilm-pair-contrastive-seed1", "minilm-pair-cosine_mse-seed1"],
}  # --quick: two runs through the whole path on a tiny random model and the miniature data
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
