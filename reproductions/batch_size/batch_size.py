"""Pcc-tuning's batch-size claim (Appendix D, Table 8): the Pearson loss is insensitive to the batch size, the
contrastive stage 2 is not.

For each batch size and seed, stage 2 of all-MiniLM-L6-v2 trains twice from the same base model: with the Pearson
loss on the filtered stage-2 set (Pcc-tuning eq. 8) and with the contrastive baseline on its pairs scored above
4.0 (§4.3); same epochs, warm-up and sequence length, the learning rate scaled with the batch by one rule
(``--lr-rule``: ``sqrt``, lr = base_lr · √(batch / base_batch), or ``linear``). Each run keeps its best checkpoint
on the dev set (SICK trial + STS-B dev, test pairs removed; about five evaluations a run) and is scored on the seven
STS test sets (SimCSE protocol). Rows are saved as they land; ``--resume`` runs only the missing ones.

    python -m reproductions batch_size --rerun        # 6 sizes × 2 losses × 3 seeds
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from reproductions._common import (
    STS_COLUMNS,
    Measured,
    Rows,
    budget,
    claim,
    load_rows,
    save_rows,
    stage2_config,
    sts_scores,
)
from reproductions._difference import DIFFERENCE_NOTE, difference_cell, holm_cells, holm_note

from pcctune.data.tasks import load_test_tasks
from pcctune.evaluation.tables import mean_std_cell
from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.datasets import train_dataset
from pcctune.training.stage import run_stage

DEV = "sick-trial+stsb-dev"


def learning_rate(args: argparse.Namespace, batch: int) -> float:
    """The stated rule: the base rate at the base batch, scaled by √ or linearly with the batch."""
    ratio = batch / args.base_batch
    return args.base_lr * (math.sqrt(ratio) if args.lr_rule == "sqrt" else ratio)


def stage_for(args: argparse.Namespace, loss: str, batch: int) -> StageConfig:
    """One stage-2 run's config, evaluated on dev about five times whatever the batch size."""
    data = {"source": "stage2", "rescale_sick": True}
    stage = stage2_config(args, loss, learning_rate(args, batch), data=data, batch_size=batch, dev=DEV, eval_steps=1)
    examples = len(train_dataset(stage, args.senteval))
    steps = args.max_steps or math.ceil(examples / batch) * args.epochs
    every = max(1, math.ceil(steps / 5))
    return stage.model_copy(update={"eval_steps": every, "logging_steps": every})


def one_run(args: argparse.Namespace, loss: str, batch: int, seed: int, tasks, work: Path) -> dict[str, Any]:
    """Train one (loss, batch, seed) from the base model; its dev-best checkpoint scored on the test sets."""
    stage = stage_for(args, loss, batch)
    model = build_model(args.model)
    started = time.perf_counter()
    folder = work / f"{loss}-{batch}-{seed}"
    result = run_stage(model, stage, RunConfig(model=args.model, seed=seed, stages=[stage]), folder, args.senteval)
    seconds = time.perf_counter() - started
    shutil.rmtree(folder, ignore_errors=True)
    scores = sts_scores(model, tasks, "fp32")
    label = f"{loss} batch {batch} seed {seed}"
    print(f"{label}: lr {stage.learning_rate:.2e}, dev {result.best_dev:.4f}, avg {scores['avg']:.2f}", flush=True)
    row = {"label": label, "loss": loss, "batch": batch, "seed": seed, "lr": stage.learning_rate}
    return row | {"dev": result.best_dev, "seconds": seconds, "sts": scores}


def measure(args: argparse.Namespace) -> Measured:
    args.senteval = resolve_senteval_dir(args.data)
    tasks = load_test_tasks(args.senteval)
    rows: Rows = load_rows(args.output / "runs.json")[0] if args.resume else []
    done = {row["label"] for row in rows}
    work = Path(tempfile.mkdtemp(prefix="batch-size-"))
    for seed in args.seeds:
        for batch in args.batch_sizes:
            for loss in args.losses:
                if f"{loss} batch {batch} seed {seed}" not in done:
                    rows.append(one_run(args, loss, batch, seed, tasks, work))
                    save_rows(args.output, "batch_size", rows, "label")
    shutil.rmtree(work, ignore_errors=True)
    return Measured(rows, described(args))


def described(args: argparse.Namespace) -> str:
    """The settings line under the table."""
    return (
        f"model {args.model}; stage 2 from the base model, {budget(args)}, warm-up 10 %, max length "
        f"{args.max_seq_length}; lr {args.base_lr:g} at batch {args.base_batch}, scaled by the {args.lr_rule} rule; "
        f"dev {DEV} (test pairs removed), about five evaluations a run; seeds {args.seeds}; SimCSE protocol on the "
        "seven test sets"
    )


def _cells(rows: Rows, loss: str, batch: int) -> list[str]:
    mine = [r for r in rows if r["loss"] == loss and r["batch"] == batch]
    return [mean_std_cell([r["sts"]["avg"] for r in mine]) if mine else "—", str(len(mine))]


def _by_seed(rows: Rows, loss: str, batch: int) -> dict[int, float]:
    return {r["seed"]: r["sts"]["avg"] for r in rows if r["loss"] == loss and r["batch"] == batch}


def table(rows: Rows, details: dict[str, Any]) -> str:
    losses = sorted({r["loss"] for r in rows}, key=["pearson", "contrastive"].index)
    both = len(losses) == 2
    header = ["batch", "lr"] + [f"{loss} {what}" for loss in losses for what in ("avg", "seeds")]
    header += ["pearson − contrastive", "Holm"] if both else []
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    batches = sorted({r["batch"] for r in rows})
    pairs = {str(b): (_by_seed(rows, "contrastive", b), _by_seed(rows, "pearson", b)) for b in batches}
    holm = holm_cells(pairs) if both else {}
    for batch in batches:
        lr = next(r["lr"] for r in rows if r["batch"] == batch)
        cells = [str(batch), f"{lr:.2e}"] + [cell for loss in losses for cell in _cells(rows, loss, batch)]
        if both:
            contrastive, pearson = pairs[str(batch)]
            cells.append(difference_cell(contrastive, pearson) if contrastive and pearson else "—")
            cells.append(holm.get(str(batch), "—"))
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"pearson − contrastive: the seven-task average, {DIFFERENCE_NOTE}.", holm_note(len(holm)) + "."]
    lines += ["", *notes] if both else []
    per_task = ["| loss, batch | " + " | ".join(STS_COLUMNS) + " |", "|" + " --- |" * (len(STS_COLUMNS) + 1)]
    for loss in losses:
        for batch in sorted({r["batch"] for r in rows if r["loss"] == loss}):
            mine = [r for r in rows if r["loss"] == loss and r["batch"] == batch]
            cells = [mean_std_cell([r["sts"][c] for r in mine]) for c in STS_COLUMNS]
            per_task.append(f"| {loss}, {batch} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + "\n".join(per_task)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """Average Spearman against the batch size (log scale), mean ± std over seeds, one line per loss."""
    from pcctune.plotting import save_figure, subplots

    figure, ax = subplots(figsize=(6.5, 3.8))
    for loss in sorted({r["loss"] for r in rows}):
        batches = sorted({r["batch"] for r in rows if r["loss"] == loss})
        values = [[r["sts"]["avg"] for r in rows if r["loss"] == loss and r["batch"] == b] for b in batches]
        errors = [float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for v in values]
        ax.errorbar(batches, [float(np.mean(v)) for v in values], yerr=errors, marker="o", capsize=3, label=loss)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="batch size (pairs)", ylabel="avg Spearman × 100, 7 STS tasks", title="Stage 2 by batch size")
    ax.legend()
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32, 64, 128, 256, 512])
    parser.add_argument("--losses", nargs="+", default=["pearson", "contrastive"], choices=["pearson", "contrastive"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--base-lr", type=float, default=2e-5, help="learning rate at --base-batch")
    parser.add_argument("--base-batch", type=int, default=64)
    parser.add_argument("--lr-rule", choices=["sqrt", "linear"], default="sqrt")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=None, help="stop every run at N steps (overrides epochs)")
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--resume", action="store_true", help="keep the rows already in OUTPUT/runs.json")


QUICK = {
    "model": "{bert}",
    "batch_sizes": [2],
    "losses": ["pearson"],
    "seeds": [1, 2],
    "max_steps": 2,
}  # --quick: every code path on tiny random models
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
