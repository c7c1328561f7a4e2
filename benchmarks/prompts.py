"""Full fine-tuning vs LoRA vs deep prompts (P ∈ {4, 8, 16}) vs shallow prompts, for stage-2 Pearson.

Every variant trains the same base model on the filtered stage-2 set with the Pearson loss and
the same budget; only what is trainable (and its learning rate, as each method needs) differs.
The checkpoint is picked on SICK trial (test overlap removed) and the final model is evaluated
on the seven STS tasks.

    python benchmarks/prompts.py --output docs/results/prompts      # all-MiniLM-L6-v2, offline

Prints a markdown table (trainable %, 7 STS + avg, train seconds) and saves it with a JSON.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _common import STS_COLUMNS, save_rows, sts_scores, write_results
from pcctune.data.tasks import load_test_tasks
from pcctune.evaluation.tables import ScoreTable
from pcctune.modeling.adapters import attach_adapter, trainable_fraction
from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.training.config import AdapterConfig, RunConfig, StageConfig
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data", default=None)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--eval-steps", type=int, default=28)
    parser.add_argument("--eval-dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output", type=Path, default=Path("runs/prompts"))
    args = parser.parse_args()
    senteval = resolve_senteval_dir(args.data)
    tasks = load_test_tasks(senteval)
    args.output.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="prompts-bench-"))
    rows = [
        {
            "variant": "base (no training)",
            "trainable": 0.0,
            "lr": None,
            "seconds": 0.0,
            "sts": sts_scores(build_model(args.model), tasks, args.eval_dtype),
        }
    ]
    for label, adapter_settings, lr in VARIANTS:
        adapter = AdapterConfig.model_validate(adapter_settings)
        model = build_model(args.model, prompt=adapter.prompt_kwargs())
        attach_adapter(model, adapter)
        stage = StageConfig.model_validate(
            {
                "name": "pcc",
                "loss": "pearson",
                "data": {"source": "stage2"},
                "batch_size": args.batch_size,
                "learning_rate": lr,
                "epochs": args.epochs,
                "warmup_ratio": 0.1,
                "max_seq_length": args.max_seq_length,
                "dev": "sick-trial",
                "eval_steps": args.eval_steps,
                "logging_steps": args.eval_steps,
            }
        )
        started = time.perf_counter()
        run_stage(
            model,
            stage,
            RunConfig(model=args.model, seed=args.seed, stages=[]),
            work / label.replace(" ", "_"),
            senteval,
        )
        seconds = time.perf_counter() - started
        rows.append(
            {
                "variant": label,
                "trainable": trainable_fraction(model) * 100,
                "lr": lr,
                "seconds": seconds,
                "sts": sts_scores(model, tasks, args.eval_dtype),
            }
        )
        print(
            f"{label}: trainable {rows[-1]['trainable']:.3f}%, avg {rows[-1]['sts']['avg']:.2f}, {seconds:.0f} s",
            flush=True,
        )
        save_rows(args.output, "prompts", rows, "variant")
    table = ScoreTable("prompts", ["trainable %", "lr", *STS_COLUMNS, "train s"], first_column="variant")
    for row in rows:
        table.rows.append(
            (
                row["variant"],
                {
                    "trainable %": f"{row['trainable']:.3f}",
                    "lr": None if row["lr"] is None else f"{row['lr']:g}",
                    **row["sts"],
                    "train s": f"{row['seconds']:.0f}",
                },
            )
        )
    settings = (
        f"model {args.model}; Pearson loss on the filtered stage-2 set (5,398 pairs); {args.epochs:g} epoch(s), "
        f"batch {args.batch_size}, max length {args.max_seq_length}, warmup 10%, seed {args.seed}; checkpoint "
        f"picked on SICK trial (test overlap removed); STS encoding in {args.eval_dtype}"
    )
    write_results(args.output, "prompts", table, settings, rows, "variant")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
