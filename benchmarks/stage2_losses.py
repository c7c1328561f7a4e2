"""Every stage-2 loss side by side on one base model, the same data and the same budget.

For each loss: train once per learning rate of the grid (first seed), keep the rate with the best
score on the dev set (SICK trial minus its test overlap; never a test set), train the other seeds
at that rate, and evaluate the final model of each seed on the seven STS tasks (SimCSE protocol).
Also runs the (u,v) / (|u−v|) / (u,v,|u−v|) concatenation ablation for one regression loss.

    python benchmarks/stage2_losses.py --output docs/results/stage2_losses     # all-MiniLM-L6-v2, offline

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

import numpy as np
from transformers import set_seed

from _common import STS_COLUMNS, load_rows, save_rows, sts_scores, write_results
from pcctune.data.tasks import load_test_tasks
from pcctune.evaluation.tables import ScoreTable, mean_std_cell
from pcctune.losses.registry import LOSSES
from pcctune.losses.regression import PENALTIES
from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.plotting import plt, save_figure
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.stage import run_stage

# Every stage-2 loss: those trained on scored pairs, and the contrastive baseline.
STAGE2_LOSSES = [name for name, spec in LOSSES.items() if spec.data in ("scored", "positives")]


def train_and_score(args, loss: str, lr: float, seed: int, work: Path, concat: str = "uv_absdiff", evaluate=None):
    """One stage-2 run; returns (best dev Spearman, STS scores or None, training seconds, final model folder)."""
    set_seed(seed)
    run = RunConfig(model=args.model, seed=seed, output_dir=str(work), stages=[])
    stage = StageConfig.model_validate(
        {
            "name": loss,
            "loss": loss,
            "data": {"source": "stage2", "rescale_sick": True},
            "batch_size": args.batch_size,
            "learning_rate": lr,
            "epochs": args.epochs,
            "warmup_ratio": 0.1,
            "max_seq_length": args.max_seq_length,
            "dev": "sick-trial",
            "eval_steps": args.eval_steps,
            "logging_steps": args.eval_steps,
            "bf16": args.bf16,
            "regression": {"concat": concat},
        }
    )
    model = build_model(args.model)
    started = time.perf_counter()
    stage_dir = work / f"{loss}-{concat}-{lr}-{seed}"
    result = run_stage(model, stage, run, stage_dir, args.senteval)
    seconds = time.perf_counter() - started
    shutil.rmtree(stage_dir / "checkpoints", ignore_errors=True)
    scores = sts_scores(model, evaluate, args.eval_dtype) if evaluate is not None else None
    return result.best_dev * 100, scores, seconds, result.final_dir


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
    grid, finals, spent_by_rate = {}, {}, {}
    seconds = 0.0
    seeds = list(seeds or args.seeds)
    runs = []
    if lr is None:
        for rate in args.lrs:
            dev, _, spent, final = train_and_score(args, loss, rate, seeds[0], work, concat)
            grid[rate], finals[rate], spent_by_rate[rate] = dev, final, spent
            seconds += spent
            print(f"  {loss} lr={rate:g}: dev {dev:.2f} ({spent:.0f} s)", flush=True)
        lr = max(grid, key=grid.get)
        scores = sts_scores(build_model(str(finals[lr])), tasks, args.eval_dtype)
        runs.append({"seed": seeds[0], "dev": grid[lr], "sts": scores, "train_seconds": spent_by_rate[lr]})
        print(f"  {loss} ({concat}) lr={lr:g} seed={seeds[0]}: dev {grid[lr]:.2f}, avg {scores['avg']:.2f}", flush=True)
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


def summary_table(results: list[dict], base: dict) -> ScoreTable:
    table = ScoreTable("stage-2 losses", ["lr", *STS_COLUMNS, "train s"], first_column="stage-2 loss")
    table.rows.append(("none (base model)", {**base, "lr": None, "train s": None}))
    for r in results:
        cells = {c: mean_std_cell([run["sts"][c] for run in r["runs"]]) for c in STS_COLUMNS}
        table.rows.append((row_label(r), {"lr": f"{r['lr']:g}", **cells, "train s": f"{r['train_seconds']:.0f}"}))
    return table


def bar_plot(results: list[dict], base: dict, path: Path) -> None:
    labels = ["base"] + [r["loss"] if r["concat"] == "uv_absdiff" else f"{r['loss']}\n({r['concat']})" for r in results]
    means = [base["avg"]] + [np.mean([run["sts"]["avg"] for run in r["runs"]]) for r in results]
    stds = [0.0] + [
        np.std(avgs, ddof=1) if len(avgs := [run["sts"]["avg"] for run in r["runs"]]) > 1 else 0.0 for r in results
    ]
    figure, ax = plt.subplots(figsize=(max(8, len(labels) * 0.9), 4.2))
    ax.bar(range(len(labels)), means, yerr=stds, capsize=3, color=["gray"] + ["tab:blue"] * len(results))
    ax.axhline(base["avg"], ls=":", c="gray")
    ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right", fontsize=8)
    ax.set(
        ylabel="avg Spearman × 100 (7 STS tasks)",
        ylim=(min(means) - 3, max(means) + 2),
        title="Stage-2 losses, mean ± std over seeds",
    )
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data", default=None, help="SentEval folder (default: $PCCTUNE_DATA or ../shared/data)")
    parser.add_argument("--losses", nargs="+", default=STAGE2_LOSSES, choices=STAGE2_LOSSES)
    parser.add_argument("--lrs", nargs="+", type=float, default=[1e-5, 2e-5, 5e-5])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--epochs", type=float, default=1.0)
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
    parser.add_argument("--output", type=Path, default=Path("runs/stage2_losses"))
    parser.add_argument(
        "--resume", action="store_true", help="keep the losses already in OUTPUT/runs.json, run the rest"
    )
    parser.add_argument("--summarize", action="store_true", help="only write the table and plot of OUTPUT/runs.json")
    args = parser.parse_args()
    args.senteval = resolve_senteval_dir(args.data)
    args.output.mkdir(parents=True, exist_ok=True)
    results, earlier = load_rows(args.output / "runs.json") if (args.resume or args.summarize) else ([], None)
    started = time.perf_counter()
    if not args.summarize:
        tasks = load_test_tasks(args.senteval)
        base = earlier.details["base"] if earlier else sts_scores(build_model(args.model), tasks, args.eval_dtype)
        work = Path(tempfile.mkdtemp(prefix="stage2-losses-"))
        done = {(r["loss"], r["concat"]) for r in results}
        plan = [(loss, "uv_absdiff") for loss in args.losses]
        if args.ablation_loss:
            plan += [(args.ablation_loss, concat) for concat in args.ablation_concats]
        for loss, concat in plan:
            if (loss, concat) in done:
                continue
            print(f"{loss} ({concat}):", flush=True)
            if concat == "uv_absdiff":
                results.append(benchmark_loss(args, loss, tasks, work))
            else:
                main_run = next((r for r in results if r["loss"] == loss and r["concat"] == "uv_absdiff"), None)
                results.append(
                    benchmark_loss(
                        args,
                        loss,
                        tasks,
                        work,
                        concat,
                        lr=main_run["lr"] if main_run else None,
                        seeds=args.ablation_seeds,
                    )
                )
            save_rows(args.output, "stage2_losses", results, "loss", details={"base": base})
        shutil.rmtree(work, ignore_errors=True)
    elif earlier is None:
        parser.error(f"nothing to summarize in {args.output / 'runs.json'}")
    else:
        base = earlier.details["base"]
    total = sum(r["train_seconds"] for r in results) if args.summarize else time.perf_counter() - started
    settings = (
        f"model {args.model}; stage-2 set: STS-B train + SICK-R train filtered against every test set, SICK "
        f"rescaled to 0–5; {args.epochs:g} epoch(s), batch {args.batch_size}, max length {args.max_seq_length}, "
        f"warmup 10%, lr grid {args.lrs} picked on SICK trial (test overlap removed) with seed {args.seeds[0]}; "
        f"seeds {args.seeds} (concatenation ablation: {args.ablation_seeds or args.seeds}); bf16 training: "
        f"{args.bf16}; STS encoding in {args.eval_dtype}; "
        + (f"training alone {total:.0f} s" if args.summarize else f"total {total:.0f} s")
    )
    write_results(args.output, "stage2_losses", summary_table(results, base), settings, results, "loss", {"base": base})
    bar_plot(results, base, args.output / "stage2_losses.png")


if __name__ == "__main__":
    main()
