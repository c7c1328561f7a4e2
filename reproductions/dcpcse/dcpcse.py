"""DCPCSE's claim (Jiang et al. 2022, §3.3, Table 1): deep continuous prompts beat shallow prompts, at a fraction of
the trainable parameters of fine-tuning.

Each published config (``configs/dcpcse_minilm.yaml``, ``configs/dcpcse_mpnet.yaml``: CLS pooler with SimCSE's MLP,
supervised InfoNCE with hard negatives, τ 0.05, the paper's prompt length, batch and learning rate) is run as is but
for what is trainable: deep prompts (the config), shallow prompts (same length and rate, input layer only), full
fine-tuning and LoRA r = 8 (rates of ``--full-lr`` / ``--lora-lr``). All variants share the data, the steps and the
dev selection (STS-B dev, test overlap removed); scores are the seven test sets, SimCSE protocol.
SimCSE's 275k NLI csv is not on this machine: ``--nli-csv PATH`` uses it, otherwise SNLI's dev+test triplets
(5,883) are the training set, and ``--max-steps`` replaces the paper's 10 epochs.

One ``pcctune train`` run folder per (config, variant, seed) under ``--runs``, resumed if killed; rows land as
runs finish.

    OMP_NUM_THREADS=1 python -m reproductions dcpcse     # its three tables: MiniLM, mpnet, MiniLM at 10 epochs
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reproductions._common import STS_COLUMNS, Measured, Rows, claim, save_rows, trained_runs

from pcctune.evaluation.tables import mean_std_cell
from pcctune.training.config import RunConfig, StageConfig, load_config

VARIANTS = ("deep prompts", "shallow prompts", "full fine-tuning", "LoRA r=8")


def variant_config(args: argparse.Namespace, path: Path, variant: str, seed: int) -> RunConfig:
    """The published config with only what trains changed (and this machine's data and budget)."""
    config = load_config(path)
    stage = config.stages[0]
    adapter, rate = config.adapter, stage.learning_rate
    if variant == "shallow prompts":
        adapter = adapter.model_copy(update={"kind": "shallow_prompt"})
    elif variant == "full fine-tuning":
        adapter, rate = adapter.model_copy(update={"kind": "none"}), args.full_lr
    elif variant == "LoRA r=8":
        adapter, rate = adapter.model_copy(update={"kind": "lora", "r": 8, "alpha": 16}), args.lora_lr
    data = (
        {"source": "simcse_csv", "path": str(args.nli_csv)}
        if args.nli_csv
        else {"source": "snli", "splits": ["dev", "test"]}
    )
    every = max(1, args.max_steps // 4)
    budget = {"max_steps": args.max_steps, "eval_steps": every, "logging_steps": every}
    changed = {"learning_rate": rate, "data": data, "batch_size": args.batch_size or stage.batch_size, **budget}
    stage = StageConfig.model_validate(stage.model_dump() | changed)
    name = f"{path.stem}-{variant.replace(' ', '_').replace('=', '')}-seed{seed}"
    update = {"adapter": adapter, "stages": [stage], "seed": seed, "output_dir": str(args.runs / name)}
    update |= {"evaluate_before": False, "data_dir": args.data} | ({"model": args.model} if args.model else {})
    return config.model_copy(update=update)


def measure(args: argparse.Namespace) -> Measured:
    rows: Rows = []
    pairs = [(Path(path), variant) for path in args.configs for variant in args.variants]
    for seed, (path, variant), config, result in trained_runs(
        args.seeds, pairs, lambda pair, s: variant_config(args, pair[0], pair[1], s), args.output
    ):
        stage = result.stages[0]
        row = {"label": f"{path.stem} | {variant} | seed {seed}", "config": path.stem, "variant": variant}
        row |= {"seed": seed, "lr": config.stages[0].learning_rate, "trainable": stage.trainable_fraction * 100}
        row |= {"seconds": stage.wall_time_s, "dev": stage.best_dev_spearman}
        rows.append(row | {"sts": result.sts_by_stage[stage.stage]})
        save_rows(args.output, "dcpcse", rows, "label")
    return Measured(rows, described(args))


def described(args: argparse.Namespace) -> str:
    data = (
        f"SimCSE's NLI csv ({args.nli_csv})" if args.nli_csv else "SNLI dev+test triplets (5,883; SimCSE's csv absent)"
    )
    return (
        f"configs {[str(p) for p in args.configs]} as published but the variant, the data ({data}) and the budget: "
        f"{args.max_steps} steps of batch {args.batch_size or 'as published'}; full fine-tuning lr {args.full_lr:g}, "
        f"LoRA lr {args.lora_lr:g}, prompts at the config's rate; dev STS-B dev (filtered); seeds {args.seeds}; "
        "SimCSE protocol on the seven test sets"
    )


def table(rows: Rows, details: dict[str, Any]) -> str:
    header = ["config", "variant", "trainable %", "lr", *STS_COLUMNS, "seeds", "train s"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for config in dict.fromkeys(r["config"] for r in rows):
        for variant in VARIANTS:
            mine = [r for r in rows if r["config"] == config and r["variant"] == variant]
            if not mine:
                continue
            scores = [mean_std_cell([r["sts"][c] for r in mine]) for c in STS_COLUMNS]
            seconds = sum(r["seconds"] for r in mine) / len(mine)
            first = mine[0]
            cells = [
                config,
                variant,
                f"{first['trainable']:.3f}",
                f"{first['lr']:g}",
                *scores,
                str(len(mine)),
                f"{seconds:.0f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """Average Spearman per variant (mean ± std over seeds), one group of bars per config."""
    import numpy as np

    from pcctune.plotting import save_figure, subplots

    configs = list(dict.fromkeys(r["config"] for r in rows))
    figure, ax = subplots(figsize=(7, 3.6))
    width = 0.8 / len(VARIANTS)
    for i, variant in enumerate(VARIANTS):
        values = [[r["sts"]["avg"] for r in rows if r["config"] == c and r["variant"] == variant] for c in configs]
        means = [float(np.mean(v)) if v else 0.0 for v in values]
        errors = [float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for v in values]
        ax.bar(np.arange(len(configs)) + i * width, means, width, yerr=errors, capsize=3, label=variant)
    ax.set_xticks(np.arange(len(configs)) + width * (len(VARIANTS) - 1) / 2, configs)
    ax.set(ylabel="avg Spearman × 100, 7 STS tasks", title="DCPCSE: what trains")
    ax.legend(fontsize=8)
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--configs", type=Path, nargs="+", default=[MINILM])
    parser.add_argument("--model", default=None, help="replace the configs' model")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--max-steps", type=int, default=46, help="46: two epochs of SNLI's 5,883 at batch 256")
    parser.add_argument("--batch-size", type=int, default=None, help="replace the configs' batch")
    parser.add_argument("--full-lr", type=float, default=5e-5, help="SimCSE's supervised BERT-base rate")
    parser.add_argument("--lora-lr", type=float, default=5e-4)
    parser.add_argument("--nli-csv", type=Path, default=None, help="SimCSE's nli_for_simcse.csv, if you have it")
    parser.add_argument("--runs", type=Path, default=Path("runs/dcpcse"), help="the run folders")


MINILM, MPNET = Path("configs/dcpcse_minilm.yaml"), Path("configs/dcpcse_mpnet.yaml")
TEN_EPOCHS = ["--variants", "deep prompts", "shallow prompts", "--seeds", "1", "--max-steps", "230"]
TABLES = {"": [], "mpnet_h100": ["--configs", str(MPNET), "--runs", "runs/dcpcse_mpnet"]}
TABLES |= {"10_epochs": [*TEN_EPOCHS, "--runs", "runs/dcpcse_10_epochs"]}
"""all-MiniLM-L6-v2 (here); all-mpnet-base-v2 (it ran on an H100); MiniLM at Table 4's 10 epochs (230 steps)."""
QUICK = {"configs": [str(MINILM)], "model": "{bert}", "seeds": [1], "max_steps": 2, "batch_size": 2}
QUICK |= {"runs": "{senteval}/../runs"}  # --quick: the four variants on a tiny BERT
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
