"""The regression framework's claims on a contrastive encoder (the regression paper).

all-MiniLM-L6-v2 is a contrastively pre-trained encoder, the setting of the paper's §4.2 (Nomic Embed, Jina v2):
its two-step recipe first fits the randomly initialised (u, v, |u−v|) head on NLI with the encoder frozen
(``regression.head_warmup: nli``), then trains encoder and head on the 5,398 filtered STS-B + SICK-R pairs (SICK
rescaled to 0–5, §4.2 and App. A). Every variant runs that stage with one thing changed:

- the loss: Smooth K2 (eq. 2) and Translated ReLU (eq. 1) against their zero-buffer limits MSE and L1 (§4.5);
- the head's input: (u, v, |u−v|) against (u, v) and |u−v| (Table 6);
- the two steps against one (no head warm-up: the head starts random);
- the regression against continued contrastive learning on the same pairs (InfoNCE on the 1,328 pairs scored
  above 4, the "+Contrast" rows of Table 3).

The paper's settings: batch 16, one epoch, the checkpoint chosen on the STS-B dev set (§4.1); k and x₀ of its
best contrastive-PLM rows (Table 5: Nomic v1, Smooth K2, k = 3, x₀ = 0.2; Translated ReLU, which Table 5 does not
tune on contrastive PLMs, uses the same). The learning rate is not in the paper: 2e-5 (Sentence-BERT's), stated in
the record. Scores: the seven test sets, SimCSE protocol, cosine of the embeddings (the head is a training device
and is never used to score).

One ``pcctune train`` run folder per (variant, seed) under ``--runs``, resumed if killed; rows land as runs finish.

    OMP_NUM_THREADS=1 python -m reproductions regression --rerun
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from reproductions._common import STS_COLUMNS, Measured, Rows, claim, save_rows, trained_runs
from reproductions._difference import DIFFERENCE_NOTE, difference_cell, holm_cells, holm_note

from pcctune.evaluation.tables import mean_std_cell
from pcctune.training.config import RunConfig

BASE = "base model (no training)"
CONTRAST = "+Contrast (InfoNCE, pairs > 4)"
CONTRAST_MINUS = "+Contrast − this row"
SLOW = 3.0
"""A seed whose wall time is over this many times its variant's median is marked in the table."""
# variant: (loss, head input, head warm-up on NLI)
VARIANTS: dict[str, tuple[str, str, str]] = {
    "Smooth K2, (u,v,|u-v|), two steps": ("smooth_k2", "uv_absdiff", "nli"),
    "Translated ReLU, (u,v,|u-v|), two steps": ("translated_relu", "uv_absdiff", "nli"),
    "MSE, (u,v,|u-v|), two steps": ("mse", "uv_absdiff", "nli"),
    "L1, (u,v,|u-v|), two steps": ("l1", "uv_absdiff", "nli"),
    "Smooth K2, (u,v), two steps": ("smooth_k2", "uv", "nli"),
    "Smooth K2, |u-v|, two steps": ("smooth_k2", "absdiff", "nli"),
    "Smooth K2, (u,v,|u-v|), one step": ("smooth_k2", "uv_absdiff", "none"),
    CONTRAST: ("contrastive", "uv_absdiff", "none"),
}


def variant_config(args: argparse.Namespace, variant: str, seed: int) -> RunConfig:
    """One stage on the filtered STS pairs with the variant's loss, head input and warm-up."""
    loss, concat, warmup = VARIANTS[variant]
    stage: dict[str, Any] = {
        "name": "regression",
        "loss": loss,
        "data": {"source": "stage2", "rescale_sick": True},
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "max_seq_length": args.max_seq_length,
        "dev": "stsb-dev-filtered",
        "eval_steps": args.eval_steps,
        "logging_steps": args.eval_steps,
        "regression": {"k": args.k, "x0": args.x0, "concat": concat, "head_warmup": warmup},
        "contrastive_threshold": args.contrastive_threshold,
    }
    stage |= {"max_steps": args.max_steps} if args.max_steps else {"epochs": args.epochs}
    name = f"{variant.translate(str.maketrans(' ,()|', '_____', '+>=')).lower()}-seed{seed}"
    return RunConfig.model_validate(
        {
            "model": args.model,
            "seed": seed,
            "output_dir": str(args.runs / name),
            "data_dir": args.data,
            "evaluate_before": variant == args.variants[0] and seed == args.seeds[0],  # the base model, once
            "stages": [stage],
        }
    )


def measure(args: argparse.Namespace) -> Measured:
    rows: Rows = []
    for seed, variant, _, result in trained_runs(
        args.seeds, args.variants, lambda v, s: variant_config(args, v, s), args.output
    ):
        stage = result.stages[0]
        row = {"label": f"{variant} | seed {seed}", "variant": variant, "seed": seed}
        row |= {"seconds": stage.wall_time_s, "dev": stage.best_dev_spearman}
        rows.append(row | {"sts": result.sts_by_stage[stage.stage]})
        if "before" in result.sts_by_stage:
            rows.append({"label": BASE, "variant": BASE, "seed": None, "seconds": 0.0, "dev": None})
            rows[-1]["sts"] = result.sts_by_stage["before"]
        save_rows(args.output, "regression", rows, "label")
    return Measured(rows, described(args))


def described(args: argparse.Namespace) -> str:
    budget = f"{args.max_steps} steps" if args.max_steps else f"{args.epochs:g} epoch(s)"
    return (
        f"{args.model}; the 5,398 filtered STS-B + SICK-R pairs; batch {args.batch_size}, {budget}, lr {args.lr:g}, "
        f"max {args.max_seq_length} tokens; k {args.k:g}, x0 {args.x0:g}; checkpoint on STS-B dev (filtered); "
        f"seeds {args.seeds}; SimCSE protocol on the seven test sets"
    )


def _by_seed(rows: Rows, variant: str) -> dict[int, float]:
    return {r["seed"]: r["sts"]["avg"] for r in rows if r["variant"] == variant}


def _seconds_cell(variant: str, mine: Rows, notes: list[str]) -> str:
    """The mean wall time of a variant's seeds, marked † (with a note) where a seed took over ``SLOW`` times the
    seeds' median (its process paused, or slowed by other work): that mean says little of the training time."""
    seconds = [r["seconds"] for r in mine]
    median = float(np.median(seconds))
    slow = [r for r in mine if r["seconds"] > SLOW * median]
    for r in slow:
        notes.append(f"† {variant}: seed {r['seed']} took {r['seconds']:.0f} s, the seeds' median {median:.0f} s")
    return f"{np.mean(seconds):.0f}" + (" †" if slow else "")


def table(rows: Rows, details: dict[str, Any]) -> str:
    header = ["variant", *STS_COLUMNS, "best dev", "seeds", "train s", CONTRAST_MINUS, "Holm"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    contrast, notes = _by_seed(rows, CONTRAST), []
    compared = [v for v in VARIANTS if v != CONTRAST and any(r["variant"] == v for r in rows)]
    holm = holm_cells({v: (_by_seed(rows, v), contrast) for v in compared}) if contrast else {}
    for variant in [BASE, *VARIANTS]:
        mine = [r for r in rows if r["variant"] == variant]
        if not mine:
            continue
        scores = [mean_std_cell([r["sts"][c] for r in mine]) for c in STS_COLUMNS]
        devs = [100 * r["dev"] for r in mine if r["dev"] is not None]
        dev, seconds = mean_std_cell(devs) if devs else "—", _seconds_cell(variant, mine, notes)
        against = (
            difference_cell(_by_seed(rows, variant), contrast) if contrast and variant not in (BASE, CONTRAST) else "—"
        )
        cells = [variant.replace("|", "\\|"), *scores, dev, str(len(mine)), seconds, against, holm.get(variant, "—")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"{CONTRAST_MINUS}: the seven-task average, {DIFFERENCE_NOTE}. {holm_note(len(holm))}."]
    lines += [line for note in notes for line in ("", note)]
    return "\n".join(lines)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """Average Spearman per variant, mean ± std over seeds."""
    import numpy as np

    from pcctune.plotting import save_figure, subplots

    variants = [v for v in [BASE, *VARIANTS] if any(r["variant"] == v for r in rows)]
    values = [[r["sts"]["avg"] for r in rows if r["variant"] == v] for v in variants]
    errors = [float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for v in values]
    figure, ax = subplots(figsize=(7, 0.45 * len(variants) + 1.2))
    ax.barh(variants, [float(np.mean(v)) for v in values], xerr=errors, capsize=3)
    ax.invert_yaxis()
    low = min(min(v) for v in values)
    ax.set_xlim(low - 2, None)
    ax.set(xlabel="avg Spearman × 100, 7 STS tasks", title="Regression framework on a contrastive encoder")
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--batch-size", type=int, default=16, help="the paper's batch (§4.1)")
    parser.add_argument("--epochs", type=float, default=1.0, help="the paper's one epoch (§4.1)")
    parser.add_argument("--max-steps", type=int, default=None, help="stop every run at N steps (overrides epochs)")
    parser.add_argument("--lr", type=float, default=2e-5, help="not in the paper: Sentence-BERT's")
    parser.add_argument("--max-seq-length", type=int, default=256, help="the paper's default cut-off (§1)")
    parser.add_argument("--k", type=float, default=3.0, help="Table 5, Nomic v1's best")
    parser.add_argument("--x0", type=float, default=0.2, help="Table 5, Nomic v1's best")
    parser.add_argument("--contrastive-threshold", type=float, default=4.0, help="a +Contrast positive (§4.2: 4.0)")
    parser.add_argument("--eval-steps", type=int, default=50)
    parser.add_argument("--runs", type=Path, default=Path("runs/regression"), help="the run folders")


QUICK = {
    "model": "{bert}",
    "seeds": [1],
    "max_steps": 2,
    "batch_size": 2,
    "eval_steps": 1,
    "contrastive_threshold": 2.0,
}
QUICK |= {"runs": "{senteval}/../runs"}  # --quick: every variant on a tiny BERT
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
