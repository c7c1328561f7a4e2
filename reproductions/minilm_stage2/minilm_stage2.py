"""Pcc-tuning's stage 2 on an encoder (Pcc-tuning §4.3 and Table 3): all-MiniLM-L6-v2 (already contrastively
trained) continued with the Pearson loss against continuing it with the contrastive loss on the high-scored pairs.

Three ``pcctune train`` runs, each record kept in ``records/`` (a missing one is trained, into ``--runs``):
the ready config as it stood before the stage-2 sweeps, both losses side by side (``before_sweep``); the ready
config ``configs/minilm_stage2.yaml`` (the sweeps' dev winner, ``ready``); and round 1's dev winner
(``ready_round1``).

``--quick`` trains each on a tiny BERT for two steps.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reproductions._common import Measured, Step, claim, overrides, record_row, run_steps, sts_table

HERE = Path("reproductions/minilm_stage2")  # run from the repository root, as the runner does
ROUND1_WINNER = Path("reproductions/stage2_quality/best_configs/pearson.yaml")


def steps(args: argparse.Namespace) -> list[Step]:
    settings = overrides(args.settings)
    return [
        Step(
            "before_sweep",
            (("train", str(HERE / "config_before_sweep.yaml"), "--compare", "pearson,contrastive", *settings),),
        ),
        Step("ready", (("train", "configs/minilm_stage2.yaml", *settings),)),
        Step("ready_round1", (("train", str(ROUND1_WINNER), *settings),)),
    ]


ROWS = [
    ("all-MiniLM-L6-v2 (no training)", "before_sweep", "before"),
    ("before the sweeps: + Pcc stage 2 (Pearson)", "before_sweep", "pcc-pearson"),
    ("before the sweeps: + contrastive stage 2 (> 4.0)", "before_sweep", "pcc-contrastive"),
    ("ready config (dev winner of both rounds): + Pcc", "ready", "pcc"),
    ("round 1's dev winner: + Pcc", "ready_round1", "pcc"),
]


def measure(args: argparse.Namespace) -> Measured:
    records = run_steps(steps(args), args.output, args.runs, args.data)
    rows = [record_row(label, name, records[name], stage) for label, name, stage in ROWS]
    return Measured(rows, "SimCSE protocol, fp32; seed 1 (42 before the sweeps); checkpoints picked on dev sets only")


table = sts_table  # the seven tasks and their average, a row per record


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=Path, default=Path("runs/minilm_stage2"), help="the run folders (scratch)")
    parser.add_argument("--settings", nargs="*", default=[], help="KEY=VALUE overrides of every run")


QUICK = {
    "runs": "{senteval}/../runs",
    "settings": ["model={bert}", "stages.0.max_steps=2", "stages.0.batch_size=2", "stages.0.eval_steps=1"]
    + ["stages.0.contrastive_threshold=2.0"],
}
BENCHMARK = claim(__name__, quick=QUICK, label_key="row")
