"""Pcc-tuning's template claim (Table 5): after both stages, the choice of prompt template matters little.

PromptEOL, PromptSTH and PromptSUM each go through both stages of the decoder recipe
(``configs/paper_recipe_smollm2_cpu.yaml``: SmolLM2-135M, QLoRA NF4, InfoNCE with hard negatives on SNLI, then the
Pearson loss continuing the adapter), with one reduced budget for all three (``--stage1-steps``,
``--stage2-steps``; dev-selected checkpoints as the recipe). Each run is scored zero-shot, after stage 1 and after
stage 2 on the seven full test sets under the papers' protocol. The claim holds when the spread between templates
(max − min of the averages) shrinks from zero-shot to stage 2.

One ``pcctune train`` run folder per (template, seed) under ``--runs``: a killed run resumes where it stopped (its
finished stages and their scores are kept), and a row lands as each run finishes.

    python -m reproductions templates --rerun     # 40–45 min of training a template on both cores here
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from reproductions._common import STS_COLUMNS, Measured, Rows, claim, save_rows, trained_runs

from pcctune.evaluation.tables import mean_std_cell
from pcctune.training.config import RunConfig, load_config

PHASES = {"before": "zero-shot", "stage 1": "stage 1", "stage 2": "stage 2"}


def run_config(args: argparse.Namespace, template: str, seed: int) -> RunConfig:
    """The recipe with ``template``, ``seed`` and the benchmark's budget; every stage scored on the test sets."""
    recipe = load_config(args.recipe)
    first, second = recipe.stages[:2]
    steps = (args.stage1_steps, args.stage2_steps)
    batch = {"batch_size": args.batch_size, "mini_batch_size": None} if args.batch_size else {}
    stages = [
        stage.model_copy(
            update={"max_steps": n, "eval_steps": max(1, n // 3), "logging_steps": max(1, n // 10)} | batch
        )
        for stage, n in zip((first, second), steps, strict=True)
    ]
    update = {
        "template": template,
        "seed": seed,
        "stages": stages,
        "output_dir": str(args.runs / f"{template}-seed{seed}"),
    }
    update |= {"evaluate_before": True, "evaluate_after_each_stage": True, "data_dir": args.data}
    return recipe.model_copy(update=update | ({"model": args.model} if args.model else {}))


def measure(args: argparse.Namespace) -> Measured:
    rows: Rows = []
    for seed, template, config, result in trained_runs(
        args.seeds, args.templates, lambda t, s: run_config(args, t, s), args.output
    ):
        stage1, stage2 = (s.name for s in config.stages)
        scores = dict(zip(PHASES, (result.sts_by_stage[k] for k in ("before", stage1, stage2)), strict=True))
        times = {s.stage: s.wall_time_s for s in result.stages}
        rows.append(
            {"label": f"{template} seed {seed}", "template": template, "seed": seed, "scores": scores}
            | {"sts": scores["stage 2"], "stage_seconds": times}
        )
        save_rows(args.output, "templates", rows, "label")
    return Measured(rows, described(args))


def described(args: argparse.Namespace) -> str:
    return (
        f"recipe {args.recipe}{f' on {args.model}' if args.model else ''}: stage 1 {args.stage1_steps} steps, stage 2 "
        f"{args.stage2_steps} steps (same for every template), checkpoints picked on dev; seeds {args.seeds}; "
        "paper protocol on the seven full test sets (adapter on the 16-bit base)"
    )


def _averages(rows: Rows, template: str, phase: str) -> list[float]:
    return [r["scores"][phase]["avg"] for r in rows if r["template"] == template]


def table(rows: Rows, details: dict[str, Any]) -> str:
    """Averages per template and phase, then the spread between templates per phase; stage 2's seven tasks."""
    templates = list(dict.fromkeys(r["template"] for r in rows))
    header = ["template", *PHASES.values(), "seeds"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for template in templates:
        cells = [mean_std_cell(_averages(rows, template, phase)) for phase in PHASES]
        lines.append(f"| {template} | " + " | ".join(cells) + f" | {len(_averages(rows, template, 'stage 2'))} |")
    spread = [np.ptp([np.mean(_averages(rows, t, phase)) for t in templates]) for phase in PHASES]
    lines.append("| spread (max − min) | " + " | ".join(f"{s:.2f}" for s in spread) + " | |")
    tasks = ["| stage 2 | " + " | ".join(STS_COLUMNS) + " |", "|" + " --- |" * (len(STS_COLUMNS) + 1)]
    for template in templates:
        mine = [r["scores"]["stage 2"] for r in rows if r["template"] == template]
        tasks.append(f"| {template} | " + " | ".join(mean_std_cell([s[c] for s in mine]) for c in STS_COLUMNS) + " |")
    return "\n".join(lines) + "\n\n" + "\n".join(tasks)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """One line per template across the three phases (mean over seeds)."""
    from pcctune.plotting import save_figure, subplots

    figure, ax = subplots(figsize=(6, 3.6))
    for template in dict.fromkeys(r["template"] for r in rows):
        ax.plot(
            list(PHASES.values()), [np.mean(_averages(rows, template, p)) for p in PHASES], marker="o", label=template
        )
    ax.set(ylabel="avg Spearman × 100, 7 STS tasks", title="Templates through both stages")
    ax.legend()
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--recipe", type=Path, default=Path("configs/paper_recipe_smollm2_cpu.yaml"))
    parser.add_argument("--model", default=None, help="replace the recipe's model")
    parser.add_argument("--templates", nargs="+", default=["eol", "sth", "sum"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--stage1-steps", type=int, default=30, help="the recipe's one epoch is 91")
    parser.add_argument("--stage2-steps", type=int, default=21, help="the recipe's is 84")
    parser.add_argument("--batch-size", type=int, default=None, help="replace both stages' batch (no mini-batches)")
    parser.add_argument("--runs", type=Path, default=Path("runs/templates"), help="the run folders")


QUICK = {"model": "{llama}", "templates": ["eol", "sum"], "stage1_steps": 2, "stage2_steps": 2, "batch_size": 2}
QUICK |= {"runs": "{senteval}/../runs"}  # --quick: both stages in 4-bit on a tiny Llama
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
