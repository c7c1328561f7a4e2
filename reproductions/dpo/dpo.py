"""Embedding DPO (a preference loss on embeddings, with a cross-encoder as the preference model) on
all-MiniLM-L6-v2, from the base model and after Pcc-tuning's stage 2.

Two ``pcctune train`` runs, each record kept in ``records/`` (a missing one is trained, into ``--runs``):
``dpo_after_pcc`` continues the Pcc stage-2 model of ``python -m reproductions minilm_stage2`` (its run folder,
``--pcc-model``) and trains the cross-encoder; ``dpo_base`` starts from the base model and reuses that
cross-encoder. Configs: ``after_pcc.yaml``, ``base.yaml``.

``--quick`` runs both on a tiny BERT for two steps.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reproductions._common import Measured, Step, claim, overrides, record_row, run_steps, sts_table

HERE = Path("reproductions/dpo")  # run from the repository root, as the runner does
PREFERENCE_MODEL = "{runs}/dpo_after_pcc/stage1-dpo/preference_model/final"


def steps(args: argparse.Namespace) -> list[Step]:
    settings = overrides(args.settings)
    after = ("train", str(HERE / "after_pcc.yaml"), "--set", f"model={args.pcc_model}", *settings)
    base = ("train", str(HERE / "base.yaml"), "--set", f"stages.0.dpo.preference_model={PREFERENCE_MODEL}")
    return [Step("dpo_after_pcc", (after,)), Step("dpo_base", ((*base, *settings),))]


ROWS = [
    ("base", "dpo_base", "before"),
    ("base → DPO", "dpo_base", "dpo"),
    ("base → Pcc stage 2", "dpo_after_pcc", "before"),
    ("base → Pcc stage 2 → DPO", "dpo_after_pcc", "dpo"),
]


def measure(args: argparse.Namespace) -> Measured:
    records = run_steps(steps(args), args.output, args.runs, args.data)
    rows = [record_row(label, name, records[name], stage) for label, name, stage in ROWS]
    return Measured(rows, "SimCSE protocol, fp32; seed 42; β 0.1, lr 1e-5, batch 32, 1 epoch, 2,000 preferences")


table = sts_table  # the seven tasks and their average, a row per record


def arguments(parser: argparse.ArgumentParser) -> None:
    pcc = "runs/minilm_stage2/before_sweep/stage1-pcc-pearson/final"
    parser.add_argument("--pcc-model", default=pcc, help="the Pcc stage-2 model DPO continues")
    parser.add_argument("--runs", type=Path, default=Path("runs/dpo"), help="the run folders (scratch)")
    parser.add_argument("--settings", nargs="*", default=[], help="KEY=VALUE overrides of both runs")


QUICK = {
    "pcc_model": "{bert}",
    "runs": "{senteval}/../runs",
    "settings": ["stages.0.dpo.preference_base={bert}", "stages.0.dpo.count=8", "stages.0.dpo.margin=0"],
}  # --quick: both runs on a tiny BERT
QUICK["settings"] += ["stages.0.max_steps=2", "stages.0.batch_size=4", "stages.0.eval_steps=1", "model={bert}"]
BENCHMARK = claim(__name__, quick=QUICK, label_key="row")
