"""Speed, measured side by side in one run: every number is a ratio against its peer.

1. **Evaluation.** The whole ``pcctune eval MODEL --tasks sts`` command against a script that runs
   sentence-transformers' ``EmbeddingSimilarityEvaluator`` over the same seven sets (STS12–16 as
   the concatenation of their subsets, STS-B and SICK-R test) on the same model: alternating, each
   in a fresh process, wall time of the whole process. Both print their seven numbers, which must
   agree to ±0.01.
2. **Training step.** A stage-2 Pearson step against a CoSENT step (sentence-transformers' own
   loss) in the sentence-transformers trainer: same model, data, batch and seed.
3. **Dev evaluation during training.** The evaluator a stage runs at every ``eval_steps``:
   sentence-transformers' ``EmbeddingSimilarityEvaluator`` (what pcctune used before) against
   pcctune's ``DevSTSEvaluator`` (the fast encoding path), on both filtered dev sets, alternating.
4. **GradCache.** One optimizer step of the Pearson loss over a group of N pairs, plain against
   cached (GradCache mini-batches), at N = 256, 1,024 and 4,096, with the peak memory of each
   (each measurement in its own process; peak RSS on CPU).

    python benchmarks/speed.py --output docs/results/speed                      # all three (long)
    python benchmarks/speed.py --only eval --model smollm2-135m --template eol --sample 300  # a quick look

Prints markdown tables and saves them (``table.md``) with every measurement (``runs.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import STS_COLUMNS, save_rows
from pcctune.evaluation.tables import ScoreTable
from pcctune.io import write_text

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _python(args: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run ``python ARGS`` in a fresh process; return its wall time and its last stdout line."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started, done.stdout.strip().splitlines()[-1]


# --- 1. evaluation ---------------------------------------------------------------------------------


def st_evaluator_scores(model_spec: str, template: str | None, data: str | None, sample: int | None) -> dict:
    """The peer: sentence-transformers' EmbeddingSimilarityEvaluator on each of the seven sets."""
    import numpy as np
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from pcctune.evaluation.protocols import senteval_text
    from pcctune.modeling.build import build_model

    model = build_model(model_spec, template=template)
    scores = {}
    for task in _tasks(data, sample):
        pairs = task.pairs
        evaluator = EmbeddingSimilarityEvaluator(
            [senteval_text(p.sentence1) for p in pairs],
            [senteval_text(p.sentence2) for p in pairs],
            [p.score for p in pairs],
            main_similarity="cosine",
            name=task.name,
            write_csv=False,
        )
        scores[task.name] = evaluator(model)[f"{task.name}_spearman_cosine"] * 100
    scores["avg"] = float(np.mean(list(scores.values())))
    return scores


def pcctune_eval_scores(model_spec: str, template: str | None, data: str | None, sample: int | None) -> dict:
    """pcctune's evaluation (used for --sample runs, where the CLI has no sampling flag)."""
    from pcctune.evaluation.sts import evaluate_sts
    from pcctune.modeling.build import build_model

    scores, avg = evaluate_sts(build_model(model_spec, template=template), _tasks(data, sample), show_progress=False)
    return {s.name: s.spearman for s in scores} | {"avg": avg}


def _tasks(data: str | None, sample: int | None):
    from pcctune.data.tasks import load_test_tasks, subsample_task
    from pcctune.paths import resolve_senteval_dir

    tasks = load_test_tasks(resolve_senteval_dir(data))
    return [subsample_task(t, sample, seed=0) for t in tasks] if sample else tasks


def eval_rows(args) -> list[dict]:
    """Alternate the two commands ``--repeats`` times; one row per command with its mean wall time."""
    common = [
        "--model",
        args.model,
        *(["--template", args.template] if args.template else []),
        *(["--data", args.data] if args.data else []),
        *(["--sample", str(args.sample)] if args.sample else []),
    ]
    out = Path(tempfile.mkdtemp()) / "eval.json"
    if args.sample:
        ours = [str(HERE / "speed.py"), "--one", "pcctune-eval", *common]
    else:
        ours = [
            "-m",
            "pcctune.cli",
            "eval",
            args.model,
            "--tasks",
            "sts",
            "--output",
            str(out),
            *(["--template", args.template] if args.template else []),
            *(["--data", args.data] if args.data else []),
        ]
    theirs = [str(HERE / "speed.py"), "--one", "st-evaluator", *common]
    times = {"pcctune eval": [], "sentence-transformers EmbeddingSimilarityEvaluator": []}
    scores = {}
    for repeat in range(args.repeats):
        for label, command in (("pcctune eval", ours), ("sentence-transformers EmbeddingSimilarityEvaluator", theirs)):
            seconds, last = _python(command)
            times[label].append(seconds)
            scores[label] = json.load(out.open())["sts"] if command is ours and not args.sample else json.loads(last)
            print(f"  {label}: {seconds:.1f} s (repeat {repeat + 1})", flush=True)
    peer = sum(times["sentence-transformers EmbeddingSimilarityEvaluator"]) / args.repeats
    return [
        {
            "label": label,
            "what": "eval",
            "model": args.model,
            "template": args.template,
            "sample": args.sample,
            "seconds": times[label],
            "mean_s": sum(times[label]) / args.repeats,
            "ratio_vs_st": peer / (sum(times[label]) / args.repeats),
            "sts": scores[label],
        }
        for label in times
    ]


# --- 2. training step -------------------------------------------------------------------------------


def train_step_seconds(loss: str, steps: int, batch: int, data: str | None) -> dict:
    """Seconds per step of ``loss`` in the trainer (the first step, a warm-up, not counted)."""
    from pcctune.modeling.build import build_model
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.config import RunConfig, StageConfig
    from pcctune.training.stage import run_stage

    stage = StageConfig.model_validate(
        {
            "name": loss,
            "loss": loss,
            "data": {"source": "stage2", "rescale_sick": True},
            "batch_size": batch,
            "max_steps": steps,
            "dev": "none",
            "logging_steps": 1,
            "eval_steps": steps,
            "learning_rate": 2e-5,
        }
    )
    work = Path(tempfile.mkdtemp())
    result = run_stage(
        build_model("all-MiniLM-L6-v2"),
        stage,
        RunConfig(model="m", seed=1, stages=[stage]),
        work / loss,
        resolve_senteval_dir(data),
    )
    stamps = [entry["train_runtime"] for entry in result.log_history if "train_runtime" in entry]
    return {"loss": loss, "seconds_per_step": stamps[-1] / steps, "steps": steps, "batch": batch}


def step_rows(args) -> list[dict]:
    runs: dict[str, list[float]] = {"pearson": [], "cosent": []}
    for repeat in range(args.repeats):
        for loss in runs:
            _, last = _python(
                [
                    str(HERE / "speed.py"),
                    "--one",
                    "train-step",
                    "--loss",
                    loss,
                    "--steps",
                    str(args.steps),
                    "--batch",
                    str(args.batch),
                    *(["--data", args.data] if args.data else []),
                ]
            )
            runs[loss].append(json.loads(last)["seconds_per_step"])
            print(f"  {loss}: {runs[loss][-1]:.3f} s/step (repeat {repeat + 1})", flush=True)
    cosent = sum(runs["cosent"]) / len(runs["cosent"])
    return [
        {
            "label": f"{loss} step",
            "what": "train-step",
            "seconds_per_step": values,
            "mean_s": sum(values) / len(values),
            "ratio_vs_cosent": (sum(values) / len(values)) / cosent,
            "batch": args.batch,
        }
        for loss, values in runs.items()
    ]


# --- 3. dev evaluation --------------------------------------------------------------------------------


def dev_eval_rows(args) -> list[dict]:
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from pcctune.data.dev import SINGLE_DEV_SETS, dev_parts
    from pcctune.modeling.build import build_model
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.dev import DevSTSEvaluator

    model = build_model("all-MiniLM-L6-v2")
    senteval = resolve_senteval_dir(args.data)
    rows = []
    for kind in SINGLE_DEV_SETS:
        pairs = [pair for part in dev_parts(kind, senteval).values() for pair in part]
        evaluators = {
            "EmbeddingSimilarityEvaluator (before)": EmbeddingSimilarityEvaluator(
                [p.sentence1 for p in pairs],
                [p.sentence2 for p in pairs],
                [p.score for p in pairs],
                batch_size=64,
                main_similarity="cosine",
                name=kind,
                write_csv=False,
            ),
            "DevSTSEvaluator (now)": DevSTSEvaluator({kind: pairs}, kind),
        }
        seconds: dict[str, list[float]] = {label: [] for label in evaluators}
        scores = {}
        for _ in range(args.repeats * 2):
            for label, evaluator in evaluators.items():
                started = time.perf_counter()
                scores[label] = evaluator(model)[f"{kind}_spearman_cosine"] * 100
                seconds[label].append(time.perf_counter() - started)
        before = min(seconds["EmbeddingSimilarityEvaluator (before)"])
        for label in evaluators:
            rows.append(
                {
                    "label": f"{kind}: {label}",
                    "what": "dev-eval",
                    "seconds": seconds[label],
                    "best_s": min(seconds[label]),
                    "ratio_vs_before": before / min(seconds[label]),
                    "spearman": scores[label],
                    "pairs": len(pairs),
                }
            )
            print(f"  {kind} {label}: {min(seconds[label]):.2f} s, Spearman {scores[label]:.4f}", flush=True)
    return rows


# --- 3. GradCache -------------------------------------------------------------------------------------


def gradcache_step(pairs: int, mini_batch: int | None, data: str | None, max_seq_length: int) -> dict:
    """One optimizer step of the Pearson loss over ``pairs`` pairs (sentences cut at ``max_seq_length``
    tokens, as the stage-2 configs do), timed after a warm-up step; peak RSS."""
    import torch

    from pcctune.data.stage2 import build_stage2_set
    from pcctune.losses.pearson import PearsonLoss
    from pcctune.modeling.build import build_model
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.memory import PeakMemory

    torch.manual_seed(0)
    model = build_model("all-MiniLM-L6-v2", max_seq_length=max_seq_length)
    model.train()
    rows = build_stage2_set(resolve_senteval_dir(data), rescale_sick=True).pairs
    group = [rows[i % len(rows)] for i in range(pairs)]
    features = [model.preprocess([p.sentence1 for p in group]), model.preprocess([p.sentence2 for p in group])]
    labels = torch.tensor([p.score for p in group])
    loss_fn = PearsonLoss(model, mini_batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)

    def step() -> None:
        optimizer.zero_grad()
        loss_fn(features, labels).backward()
        optimizer.step()

    step()  # warm-up (allocator, optimizer state)
    with PeakMemory() as memory:
        started = time.perf_counter()
        step()
        seconds = time.perf_counter() - started
    return {
        "pairs": pairs,
        "mini_batch": mini_batch,
        "seconds": seconds,
        "peak_mb": memory.peak_mb,
        "memory_kind": memory.kind,
        "max_seq_length": max_seq_length,
    }


def _gradcache_one(args, pairs: int, mini_batch: int | None) -> dict:
    _, last = _python(
        [
            str(HERE / "speed.py"),
            "--one",
            "gradcache",
            "--pairs",
            str(pairs),
            "--mini-batch",
            str(mini_batch or 0),
            "--max-seq-length",
            str(args.max_seq_length),
            *(["--data", args.data] if args.data else []),
        ]
    )
    measured = json.loads(last)
    print(
        f"  {pairs} pairs, mini-batch {mini_batch}: {measured['seconds']:.1f} s, {measured['peak_mb']:.0f} MB",
        flush=True,
    )
    return measured


def gradcache_rows(args) -> list[dict]:
    """Plain and cached steps per group size; a plain step above ``--plain-max-pairs`` would not fit in memory."""
    rows = []
    for pairs in args.pairs:
        plain = _gradcache_one(args, pairs, None) if pairs <= args.plain_max_pairs else None
        cached = _gradcache_one(args, pairs, args.mini_batch)
        rows.append(
            {
                "label": f"{pairs} pairs",
                "what": "gradcache",
                "plain": plain,
                "cached": cached,
                "ratio": cached["seconds"] / plain["seconds"] if plain else None,
            }
        )
    return rows


# --- tables -------------------------------------------------------------------------------------------


def tables(rows: list[dict]) -> str:
    parts = []
    evals = [r for r in rows if r["what"] == "eval"]
    if evals:
        table = ScoreTable("evaluation", ["mean s", "× faster than ST", *STS_COLUMNS], first_column="command")
        for r in evals:
            table.rows.append(
                (
                    f"{r['label']} ({r['model']})",
                    {"mean s": f"{r['mean_s']:.1f}", "× faster than ST": f"{r['ratio_vs_st']:.2f}", **r["sts"]},
                )
            )
        parts.append(table.to_markdown())
    steps = [r for r in rows if r["what"] == "train-step"]
    if steps:
        table = ScoreTable("steps", ["s/step", "× CoSENT"], first_column="step")
        for r in steps:
            table.rows.append((r["label"], {"s/step": f"{r['mean_s']:.3f}", "× CoSENT": f"{r['ratio_vs_cosent']:.3f}"}))
        parts.append(table.to_markdown())
    devs = [r for r in rows if r["what"] == "dev-eval"]
    if devs:
        table = ScoreTable(
            "dev", ["pairs", "best s", "× faster than before", "Spearman × 100"], first_column="evaluator"
        )
        for r in devs:
            table.rows.append(
                (
                    r["label"],
                    {
                        "pairs": r["pairs"],
                        "best s": f"{r['best_s']:.2f}",
                        "× faster than before": f"{r['ratio_vs_before']:.2f}",
                        "Spearman × 100": f"{r['spearman']:.4f}",
                    },
                )
            )
        parts.append(table.to_markdown())
    caches = [r for r in rows if r["what"] == "gradcache"]
    if caches:
        table = ScoreTable(
            "gradcache", ["plain s", "cached s", "cached / plain", "plain MB", "cached MB"], first_column="group"
        )
        for r in caches:
            table.rows.append(
                (
                    r["label"],
                    {
                        "plain s": f"{r['plain']['seconds']:.1f}" if r["plain"] else "does not fit",
                        "cached s": f"{r['cached']['seconds']:.1f}",
                        "cached / plain": f"{r['ratio']:.2f}" if r["ratio"] else None,
                        "plain MB": f"{r['plain']['peak_mb']:.0f}" if r["plain"] else None,
                        "cached MB": f"{r['cached']['peak_mb']:.0f}",
                    },
                )
            )
        parts.append(table.to_markdown())
    return "\n\n".join(parts)


def one(args) -> None:
    """A single measurement in this (fresh) process; its JSON is the last line printed."""
    if args.one == "st-evaluator":
        result = st_evaluator_scores(args.model, args.template, args.data, args.sample)
    elif args.one == "pcctune-eval":
        result = pcctune_eval_scores(args.model, args.template, args.data, args.sample)
    elif args.one == "train-step":
        result = train_step_seconds(args.loss, args.steps, args.batch, args.data)
    else:
        result = gradcache_step(args.pairs[0], args.mini_batch or None, args.data, args.max_seq_length)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parts = ["eval", "steps", "dev-eval", "gradcache"]
    parser.add_argument("--only", choices=parts, nargs="+", default=parts)
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--template", default=None)
    parser.add_argument("--sample", type=int, default=None, help="pairs per task (a seeded sample) for a quick run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--loss", default="pearson")
    parser.add_argument("--pairs", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--mini-batch", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=64, help="token cap of the GradCache measurements")
    parser.add_argument(
        "--plain-max-pairs",
        type=int,
        default=1024,
        help="largest group a plain (uncached) step is tried at: 4,096 pairs need ~80 GB here",
    )
    parser.add_argument("--data", default=None)
    parser.add_argument("--one", choices=["st-evaluator", "pcctune-eval", "train-step", "gradcache"], default=None)
    parser.add_argument("--output", type=Path, default=Path("runs/speed"))
    args = parser.parse_args()
    if args.one:
        one(args)
        return
    rows: list[dict] = []
    for part, measure in (
        ("eval", eval_rows),
        ("steps", step_rows),
        ("dev-eval", dev_eval_rows),
        ("gradcache", gradcache_rows),
    ):
        if part in args.only:
            print(f"{part}:", flush=True)
            rows += measure(args)
            save_rows(args.output, "speed", rows, "label")
    settings = (
        f"machine: {os.cpu_count()} CPU cores, torch threads default; model {args.model}"
        f"{', template ' + args.template if args.template else ''}; "
        f"{'sample of ' + str(args.sample) + ' pairs per task' if args.sample else 'full test sets'}; "
        f"{args.repeats} alternating repeats; command: python benchmarks/speed.py {' '.join(sys.argv[1:])}"
    )
    text = tables(rows)
    print(text)
    print(settings)
    write_text(args.output / "table.md", text + "\n\n" + settings + "\n")
    save_rows(args.output, "speed", rows, "label", settings)


if __name__ == "__main__":
    main()
