"""Full fine-tuning vs LoRA vs deep prompts (P ∈ {4, 8, 16}) vs shallow prompts, for stage-2 Pearson.

Every variant trains the same base model on the filtered stage-2 set with the Pearson loss and
the same budget; only what is trainable (and its learning rate, as each method needs) differs.
The checkpoint is picked on SICK trial (test overlap removed) and the final model is evaluated
on the seven STS tasks.

    python -m reproductions prompts --rerun      # all-MiniLM-L6-v2, offline

Prints a markdown table (trainable %, 7 STS + avg, train seconds) and saves it with a JSON.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from reproductions._common import STS_COLUMNS, Measured, Rows, budget, claim, save_rows, stage2_config, sts_scores

from pcctune.data.tasks import load_test_tasks
from pcctune.evaluation.tables import ScoreTable
from pcctune.modeling.adapters import attach_adapter, trainable_fraction
from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.training.config import AdapterConfig, RunConfig
from pcctune.training.stage import run_stage

# (label, adapter settings, learning rate): prompts train from scratch and need large rates (DCPCSE
# grid 5e-3…3e-2), LoRA the usual 5e-4 (Pcc-tuning, PromptEOL), full fine-tuning 2e-5.
VARIANTS = [
    ("full fine-tuning", {"kind": "none"}, 2e-5),
    ("LoRA r=8", {"kind": "lora", "r": 8, "alpha": 16}, 5e-4),
    ("deep prompts P=4", {"kind": "deep_prompt", "prompt_length": 4}, 1e-2),
    ("deep prompts P=8", {"kind": "deep_prompt", "prompt_length": 8}, 1e-2),
    ("deep prompts P=16", {"kind": "deep_prompt", "prompt_length": 16}, 1e-2),
    ("shallow prompts P=16", {"kind": "shallow_prompt", "prompt_length": 16}, 1e-2),
]


def variant_row(args: argparse.Namespace, label: str, adapter_settings: dict, lr: float, work: Path, tasks) -> dict:
    """Train one variant on the stage-2 set and score it on the seven test sets."""
    adapter = AdapterConfig.model_validate(adapter_settings)
    model = build_model(args.model, prompt=adapter.prompt_kwargs())
    attach_adapter(model, adapter)
    stage = stage2_config(args, "pearson", lr, name="pcc")
    started = time.perf_counter()
    run_config = RunConfig(model=args.model, seed=args.seed, stages=[stage])
    run_stage(model, stage, run_config, work / label.replace(" ", "_"), args.senteval)
    seconds = time.perf_counter() - started
    scores = sts_scores(model, tasks, args.eval_dtype)
    trainable = trainable_fraction(model) * 100
    print(f"{label}: trainable {trainable:.3f}%, avg {scores['avg']:.2f}, {seconds:.0f} s", flush=True)
    return {"variant": label, "trainable": trainable, "lr": lr, "seconds": seconds, "sts": scores}


def measure(args: argparse.Namespace) -> Measured:
    args.senteval = resolve_senteval_dir(args.data)
    tasks = load_test_tasks(args.senteval)
    work = Path(tempfile.mkdtemp(prefix="prompts-bench-"))
    base = sts_scores(build_model(args.model), tasks, args.eval_dtype)
    rows = [{"variant": "base (no training)", "trainable": 0.0, "lr": None, "seconds": 0.0, "sts": base}]
    for label, adapter_settings, lr in VARIANTS:
        rows.append(variant_row(args, label, adapter_settings, lr, work, tasks))
        save_rows(args.output, "prompts", rows, "variant")
    shutil.rmtree(work, ignore_errors=True)
    settings = (
        f"model {args.model}; Pearson loss on the filtered stage-2 set; {budget(args)}, "
        f"batch {args.batch_size}, max length {args.max_seq_length}, warmup 10%, seed {args.seed}; checkpoint "
        f"picked on SICK trial (test overlap removed); STS encoding in {args.eval_dtype}"
    )
    return Measured(rows, settings)


def table(rows: Rows, details: dict[str, Any]) -> str:
    cells = [
        (
            row["variant"],
            {
                "trainable %": f"{row['trainable']:.3f}",
                "lr": None if row["lr"] is None else f"{row['lr']:g}",
                **row["sts"],
                "train s": f"{row['seconds']:.0f}",
            },
        )
        for row in rows
    ]
    return ScoreTable("prompts", ["trainable %", "lr", *STS_COLUMNS, "train s"], cells, "variant").to_markdown()


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--max-steps", type=int, default=None, help="stop every variant at N steps (overrides epochs)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--eval-steps", type=int, default=28)
    parser.add_argument("--eval-dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--seed", type=int, default=42)


QUICK = {
    "model": "{bert}",
    "max_steps": 2,
    "batch_size": 2,
    "eval_steps": 1,
}  # --quick: every code path on tiny random models
BENCHMARK = claim(__name__, quick=QUICK, label_key="variant")
