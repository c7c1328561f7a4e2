"""Every stage-2 loss side by side on one base model, the same data and the same budget.

For each loss: train once per learning rate of the grid (first seed), keep the rate with the best
score on the dev set (SICK trial minus its test overlap; never a test set), train the other seeds
at that rate, and evaluate the final model of each seed on the seven STS tasks (SimCSE protocol).
Also runs the (u,v) / (|u−v|) / (u,v,|u−v|) concatenation ablation for one regression loss.

    python -m reproductions stage2_losses --rerun     # all-MiniLM-L6-v2, offline

Prints a markdown table (mean ± std over seeds per task, wall time per loss) and saves it with
a JSON of every run and a bar plot under --output. ``runs.json`` is rewritten after each loss:
``--resume`` runs only what it lacks, ``--summarize`` writes the table and plot of what it holds.
"""

from __future__ import annotations

import argparse
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
from transformers import set_seed

from pcctune.data.tasks import load_test_tasks
from pcctune.evaluation.tables import ScoreTable, mean_std_cell
from pcctune.losses.registry import LOSSES, resolve_loss
from pcctune.losses.regression import PENALTIES
from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.training.config import RunConfig
from pcctune.training.stage import run_stage

# Every stage-2 loss: those trained on scored pairs, and the contrastive baseline.
STAGE2_LOSSES = [name for name, spec in LOSSES.items() if spec.data in ("scored", "positives")]


def train_and_score(args, loss: str, lr: float, seed: int, work: Path, concat: str = "uv_absdiff", evaluate=None):
    """One stage-2 run; returns (best dev Spearman, STS scores or None, training seconds, final model folder)."""
    set_seed(seed)
    data = {"source": "stage2", "rescale_sick": True}
    stage = stage2_config(args, loss, lr, data=data, bf16=args.bf16, regression={"concat": concat})
    run = RunConfig(model=args.model, seed=seed, output_dir=str(work), stages=[stage])
    model = build_model(args.model)
    started = time.perf_counter()
    stage_dir = work / f"{loss}-{concat}-{lr}-{seed}"
    result = run_stage(model, stage, run, stage_dir, args.senteval)
    seconds = time.perf_counter() - started
    shutil.rmtree(stage_dir / "checkpoints", ignore_errors=True)
    scores = sts_scores(model, evaluate, args.eval_dtype) if evaluate is not None else None
    return result.best_dev * 100, scores, seconds, result.final_dir


def grid_search(args, loss: str, seed: int, work: Path, concat: str, tasks) -> tuple[float, dict, dict, float]:
    """Train at every rate of ``--lrs`` with ``seed``; the dev-best rate, the grid, that run's row, the seconds."""
    grid, finals, spent_by_rate = {}, {}, {}
    for rate in args.lrs:
        dev, _, spent, final = train_and_score(args, loss, rate, seed, work, concat)
        grid[rate], finals[rate], spent_by_rate[rate] = dev, final, spent
        print(f"  {loss} lr={rate:g}: dev {dev:.2f} ({spent:.0f} s)", flush=True)
    lr = max(grid, key=grid.__getitem__)
    scores = sts_scores(build_model(str(finals[lr])), tasks, args.eval_dtype)
    print(f"  {loss} ({concat}) lr={lr:g} seed={seed}: dev {grid[lr]:.2f}, avg {scores['avg']:.2f}", flush=True)
    first = {"seed": seed, "dev": grid[lr], "sts": scores, "train_seconds": spent_by_rate[lr]}
    return lr, grid, first, sum(spent_by_rate.values())


def benchmark_loss(
    args,
    loss: str,
    tasks,
    work: Path,
    concat: str = "uv_absdiff",
    lr: float | None = None,
    seeds: list[int] | None = None,
) -> dict:
    """Grid over learning rates on the dev set (first seed), then the other seeds at the best rate.

    The first seed's run at the chosen rate is the grid's own run (its saved model is evaluated).
    """
    seeds = list(seeds or args.seeds)
    grid: dict[float, float] = {}
    runs, seconds = [], 0.0
    if lr is None:
        lr, grid, first, seconds = grid_search(args, loss, seeds[0], work, concat, tasks)
        runs.append(first)
        seeds = seeds[1:]
    for seed in seeds:
        dev, scores, spent, _ = train_and_score(args, loss, lr, seed, work, concat, evaluate=tasks)
        seconds += spent
        runs.append({"seed": seed, "dev": dev, "sts": scores, "train_seconds": spent})
        print(f"  {loss} ({concat}) lr={lr:g} seed={seed}: dev {dev:.2f}, avg {scores['avg']:.2f}", flush=True)
    return {"loss": loss, "concat": concat, "lr_grid_dev": grid, "lr": lr, "runs": runs, "train_seconds": seconds}


def row_label(result: dict) -> str:
    concat = result["concat"]
    return (
        result["loss"] if concat == "uv_absdiff" or result["loss"] not in PENALTIES else f"{result['loss']} ({concat})"
    )


PEARSON_MINUS = "pearson − this loss"


def _by_seed(result: dict) -> dict[int, float]:
    return {run["seed"]: run["sts"]["avg"] for run in result["runs"]}


def table(results: Rows, details: dict[str, Any]) -> str:
    """Each loss's scores, and the Pearson loss's average minus the loss's, seed by seed."""
    base = details["base"]
    pearson = next((_by_seed(r) for r in results if row_label(r) == "pearson"), None)
    columns = ["lr", *STS_COLUMNS, "train s", PEARSON_MINUS, "Holm"]
    table = ScoreTable("stage-2 losses", columns, first_column="stage-2 loss")
    table.rows.append(("none (base model)", {**base, "lr": None, "train s": None, PEARSON_MINUS: None, "Holm": None}))
    others = [r for r in results if row_label(r) != "pearson"]
    holm = holm_cells({row_label(r): (_by_seed(r), pearson) for r in others}) if pearson else {}
    for r in results:
        cells = {c: mean_std_cell([run["sts"][c] for run in r["runs"]]) for c in STS_COLUMNS}
        against = difference_cell(_by_seed(r), pearson) if pearson and row_label(r) != "pearson" else None
        cells |= {"lr": f"{r['lr']:g}", "train s": f"{r['train_seconds']:.0f}", PEARSON_MINUS: against}
        table.rows.append((row_label(r), cells | {"Holm": holm.get(row_label(r))}))
    notes = f"{PEARSON_MINUS}: the seven-task average, {DIFFERENCE_NOTE}. {holm_note(len(holm))}."
    return table.to_markdown() + "\n\n" + notes


def bar_plot(results: Rows, details: dict[str, Any], path: Path) -> None:
    from pcctune.plotting import save_figure, subplots

    base = details["base"]
    labels = ["base"] + [r["loss"] if r["concat"] == "uv_absdiff" else f"{r['loss']}\n({r['concat']})" for r in results]
    means = [base["avg"]] + [np.mean([run["sts"]["avg"] for run in r["runs"]]) for r in results]
    stds = [0.0] + [
        np.std(avgs, ddof=1) if len(avgs := [run["sts"]["avg"] for run in r["runs"]]) > 1 else 0.0 for r in results
    ]
    figure, ax = subplots(figsize=(max(8, len(labels) * 0.9), 4.2))
    ax.bar(range(len(labels)), means, yerr=stds, capsize=3, color=["gray"] + ["tab:blue"] * len(results))
    ax.axhline(base["avg"], ls=":", c="gray")
    ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right", fontsize=8)
    ax.set(
        ylabel="avg Spearman × 100 (7 STS tasks)",
        ylim=(min(means) - 3, max(means) + 2),
        title="Stage-2 losses, mean ± std over seeds",
    )
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--losses", nargs="+", default=STAGE2_LOSSES, choices=STAGE2_LOSSES)
    parser.add_argument("--lrs", nargs="+", type=float, default=[1e-5, 2e-5, 5e-5])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--max-steps", type=int, default=None, help="stop every run at N steps (overrides epochs)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--eval-steps", type=int, default=28)
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast for training")
    parser.add_argument("--eval-dtype", choices=["fp32", "bf16"], default="fp32", help="dtype of STS encoding")
    parser.add_argument("--ablation-loss", default="smooth_k2", help="loss of the concatenation ablation ('' to skip)")
    parser.add_argument(
        "--ablation-concats",
        nargs="+",
        choices=["uv", "absdiff"],
        default=["uv", "absdiff"],
        help="head inputs of the ablation (besides the main runs' (u, v, |u-v|))",
    )
    parser.add_argument(
        "--ablation-seeds", nargs="+", type=int, default=None, help="seeds of the ablation (default: --seeds)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the losses already in OUTPUT/runs.json, run the rest"
    )


def plan(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(loss, head input) of every row: each loss with (u, v, |u−v|), then the ablation's other inputs."""
    rows = [(loss, "uv_absdiff") for loss in args.losses]
    return rows + [(args.ablation_loss, concat) for concat in args.ablation_concats if args.ablation_loss]


def measure(args: argparse.Namespace) -> Measured:
    args.senteval = resolve_senteval_dir(args.data)
    results, earlier = load_rows(args.output / "runs.json") if args.resume else ([], None)
    for row in results:  # a row recorded under a loss's earlier name (contrastive, ce, mse, l1) is that loss's
        row["loss"] = resolve_loss(row["loss"])
    started = time.perf_counter()
    tasks = load_test_tasks(args.senteval)
    base = earlier.details["base"] if earlier else sts_scores(build_model(args.model), tasks, args.eval_dtype)
    work = Path(tempfile.mkdtemp(prefix="stage2-losses-"))
    done = {(r["loss"], r["concat"]) for r in results}
    for loss, concat in (step for step in plan(args) if step not in done):
        print(f"{loss} ({concat}):", flush=True)
        main_run = next((r for r in results if r["loss"] == loss and r["concat"] == "uv_absdiff"), None)
        if concat == "uv_absdiff":
            results.append(benchmark_loss(args, loss, tasks, work))
        else:
            lr = main_run["lr"] if main_run else None
            results.append(benchmark_loss(args, loss, tasks, work, concat, lr=lr, seeds=args.ablation_seeds))
        save_rows(args.output, "stage2_losses", results, "loss", details={"base": base})
    shutil.rmtree(work, ignore_errors=True)
    settings = (
        f"model {args.model}; stage-2 set: STS-B train + SICK-R train filtered against every test set, SICK "
        f"rescaled to 0–5; {budget(args)}, batch {args.batch_size}, max length {args.max_seq_length}, "
        f"warmup 10%, lr grid {args.lrs} picked on SICK trial (test overlap removed) with seed {args.seeds[0]}; "
        f"seeds {args.seeds} (concatenation ablation: {args.ablation_seeds or args.seeds}); bf16 training: "
        f"{args.bf16}; STS encoding in {args.eval_dtype}; total {time.perf_counter() - started:.0f} s"
    )
    return Measured(results, settings, {"base": base})


QUICK = {
    "model": "{bert}",
    "losses": ["pearson", "smooth_k2"],
    "lrs": [1e-4],
    "seeds": [1, 2],
    "ablation_concats": ["uv"],
    "max_steps": 2,
    "batch_size": 2,
    "eval_steps": 1,
}  # --quick: every code path on tiny random models
BENCHMARK = claim(__name__, quick=QUICK, label_key="loss", plot=bar_plot)
