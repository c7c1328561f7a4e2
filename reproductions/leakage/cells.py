"""What the leakage grid's runs are, shared by its two searches: a cell (model, level, loss, training set), the
settings every run shares, the config of one run, and how a run's record reads as a row of the tables."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from reproductions._common import Rows, pair_counts

from pcctune.data.leakage import LeakageLevel
from pcctune.data.tasks import SEVEN_TASKS, SHORT_NAMES
from pcctune.evaluation.tables import mean_std_cell
from pcctune.results import RunResult, load_result
from pcctune.training.config import RunConfig

HERE = Path(__file__).resolve().parent
TASKS = list(SEVEN_TASKS)
SHORT = [SHORT_NAMES[task] for task in TASKS]
LOSSES = ("pearson", "cosine_mse", "cosent", "angle", "contrastive")
FIXED_STAGE: dict[str, Any] = {
    "data": {"source": "stage2", "rescale_sick": True},
    "max_seq_length": 128,
    "dev": "sick-trial+stsb-dev",
    "contrastive_rule": ">=",
    "save_total_limit": 1,
    "logging_steps": 5,
}
"""Settings shared by every run: SICK-R rescaled to 0–5 (so a score of 4 means the same in both sources), the
contrastive stage's positives scored 4 or more (the rule that gives the paper's 1,543 pairs at ``pair``), the dev
set named as in the ready config and filtered at the run's level."""
EVALUATIONS_PER_EPOCH = 4


@dataclass(frozen=True)
class Cell:
    """One row of the grid: model, leakage level, loss, and training set (``stage2`` or the ``control``)."""

    model: str
    level: LeakageLevel
    loss: str
    data: str = "stage2"

    @property
    def name(self) -> str:
        short = "mpnet" if "mpnet" in self.model else "minilm"
        kind = "" if self.data == "stage2" else f"-{self.data}"
        return f"{short}-{self.level.value}{kind}-{self.loss}"


MINILM, MPNET = "all-MiniLM-L6-v2", "all-mpnet-base-v2"
BASE_RECORDS = {
    MINILM: HERE.parent / "minilm_stage2" / "records" / "ready.json",
    MPNET: HERE.parent / "baselines" / "records" / "mpnet_simcse.json",
}
"""Each model's own scores before training, under the same protocol and test files (a run's "before", an eval's)."""
SENTENCE, PAIR = LeakageLevel.sentence, LeakageLevel.pair


def records(args: argparse.Namespace) -> Path:
    return Path(args.output) / "records"


def best_dev(result: RunResult) -> float:
    value = result.stages[0].best_dev_spearman
    return float("-inf") if value is None else value


def config_of(
    cell: Cell, settings: dict[str, Any], seed: int, output: Path, data: str | None, quick: bool, model: str = ""
) -> RunConfig:
    """The run of ``cell`` with a trial's ``settings`` at ``seed``, into ``output``; a ``data`` setting replaces the
    stage-2 set (the control's pairs), filtered at the cell's level."""
    stage = {"name": cell.loss, "loss": cell.loss, **FIXED_STAGE, **settings}
    stage["data"] = {**stage["data"], "leakage": cell.level.value}
    if quick:  # tiny random model, miniature data: two steps, dev on SICK trial's few pairs
        stage |= {"batch_size": 2, "epochs": 1, "max_steps": 2, "eval_steps": 1, "contrastive_threshold": 0.0}
        stage |= {"dev": "sick-trial"}
    payload = {"model": model or cell.model, "seed": seed, "output_dir": str(output), "evaluate_before": False}
    return RunConfig.model_validate(payload | ({"data_dir": data} if data else {}) | {"stages": [stage]})


def base_scores(model: str = MINILM) -> dict[str, float]:
    """``model``'s seven test scores and their average before training (``BASE_RECORDS``)."""
    record = load_result(BASE_RECORDS[model])
    return record.sts_by_stage["before"] if isinstance(record, RunResult) else record.sts


def row_of(name: str, result: RunResult, search: dict[str, Any]) -> dict[str, Any]:
    """One seed run's row: what it was, its dev and test scores, its settings and what it cost."""
    scores = next(scores for label, scores in result.sts_by_stage.items() if label != "before")
    stage = result.stages[0]
    cell, seed = name.rsplit("-seed", 1)
    model, level, *kind, loss = cell.split("-", 3) if "-control-" in cell else [*cell.split("-", 2)]
    row = {"label": name, "cell": cell, "model": model, "level": level, "loss": loss, "seed": int(seed)}
    row |= {"data": "control" if kind else "stage2", "train_examples": stage.train_examples}
    row |= {"best_dev": stage.best_dev_spearman, "dev_pairs": stage.dev_pairs, "settings": search}
    row |= {"train_seconds": stage.wall_time_s, "cpu_seconds": stage.cpu_time_s, "pairs": pair_counts(result)}
    return row | {"sts": scores}


def groups(rows: Rows) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["cell"], []).append(row)
    return found


def seed_averages(runs: Rows) -> dict[int, float]:
    """Each run's seven-task average by its seed: one side of :func:`pcctune.evaluation.compare.seed_difference`."""
    return {r["seed"]: r["sts"]["avg"] for r in runs}


def cell_text(values: list[float]) -> str:
    return mean_std_cell(values) if len(values) > 1 else f"{values[0]:.2f}"


@cache
def say_left_out(name: str, model: str) -> None:
    """Say once per process (``--jobs`` asks again at every refill of its pool) that a transfer is left out."""
    print(f"[transfer] {name}: its model {model} is not on this machine; left out", flush=True)
