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
5. **Tokens** (not timed): the padded tokens each evaluation of (1) runs through the model; their ratio bounds
   what running fewer tokens can gain.
6. **Kernels.** A training step of ``--loss`` with the linear layers by oneDNN (``onednn: true``, the default;
   QLoRA's 4-bit layers too) against torch's default CPU kernel (``onednn: false``), alternating, each in a fresh
   process; ``--template`` and ``--qlora`` (the decoder recipe's LoRA r = 64 on an NF4 base) as a run sets them.

    python benchmarks/speed.py --output docs/results/speed                      # every part (long)
    python benchmarks/speed.py --only eval --model smollm2-135m --template eol --sample 300  # a quick look
    python benchmarks/speed.py --only kernels --model smollm2-135m --template eol --qlora --batch 16 --steps 4

Prints markdown tables and saves them (``table.md``) with every measurement (``runs.json``). Each
measurement runs in a fresh process: this script again, with ``--one``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import STS_COLUMNS, Benchmark, Measured, Rows, data_flag, parse, run, run_python, save_rows
from pcctune.evaluation.tables import ScoreTable

HERE = Path(__file__).resolve().parent
ST_LABEL = "sentence-transformers EmbeddingSimilarityEvaluator"


# --- 1. evaluation ---------------------------------------------------------------------------------


def st_evaluator_scores(args: argparse.Namespace) -> dict:
    """The peer: sentence-transformers' EmbeddingSimilarityEvaluator on each of the seven sets."""
    import numpy as np
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from pcctune.evaluation.protocols import senteval_text
    from pcctune.modeling.build import build_model

    model = build_model(args.model, template=args.template)
    scores = {}
    for task in _tasks(args):
        evaluator = EmbeddingSimilarityEvaluator(
            [senteval_text(p.sentence1) for p in task.pairs],
            [senteval_text(p.sentence2) for p in task.pairs],
            [p.score for p in task.pairs],
            main_similarity="cosine",
            name=task.name,
            write_csv=False,
        )
        scores[task.name] = evaluator(model)[f"{task.name}_spearman_cosine"] * 100
    scores["avg"] = float(np.mean(list(scores.values())))
    return scores


def pcctune_eval_scores(args: argparse.Namespace) -> dict:
    """pcctune's evaluation (used for --sample runs, where the CLI has no sampling flag)."""
    from pcctune.evaluation.sts import evaluate_sts
    from pcctune.modeling.build import build_model

    budget = {"token_budget": args.token_budget} if args.token_budget else {}
    model = build_model(args.model, template=args.template)
    scores, avg = evaluate_sts(model, _tasks(args), show_progress=False, **budget)
    return {s.name: s.spearman for s in scores} | {"avg": avg}


def _tasks(args: argparse.Namespace):
    from pcctune.data.tasks import load_test_tasks, subsample_task
    from pcctune.paths import resolve_senteval_dir

    tasks = load_test_tasks(resolve_senteval_dir(args.data))
    return [subsample_task(t, args.sample, seed=0) for t in tasks] if args.sample else tasks


def eval_commands(args: argparse.Namespace, out: Path) -> dict[str, list[str]]:
    """The two commands compared: ``pcctune eval`` (pcctune's own path with ``--sample``) and ST's evaluator."""
    model = ["--model", args.model, *(["--template", args.template] if args.template else []), *data_flag(args)]
    one = [str(HERE / "speed.py"), *model, *(["--sample", str(args.sample)] if args.sample else []), "--one"]
    template = ["--template", args.template] if args.template else []
    ours = [*one, "pcctune-eval"] if args.sample else ["-m", "pcctune.cli", "eval", args.model, "--tasks", "sts"]
    if not args.sample:
        ours += ["--output", str(out), *template, *data_flag(args)]
    if args.token_budget:
        ours += ["--token-budget", str(args.token_budget)]
    return {"pcctune eval": ours, ST_LABEL: [*one, "st-evaluator"]}


def eval_rows(args: argparse.Namespace) -> Rows:
    """Alternate the two commands ``--repeats`` times; one row per command with its mean wall time."""
    out = Path(tempfile.mkdtemp()) / "eval.json"
    commands = eval_commands(args, out)
    times: dict[str, list[float]] = {label: [] for label in commands}
    scores = {}
    for repeat in range(args.repeats):
        for label, command in commands.items():
            seconds, last = run_python(command)
            times[label].append(seconds)
            cli_record = label == "pcctune eval" and not args.sample
            scores[label] = json.load(out.open())["sts"] if cli_record else json.loads(last)
            print(f"  {label}: {seconds:.1f} s (repeat {repeat + 1})", flush=True)
    peer = sum(times[ST_LABEL]) / args.repeats
    return [
        {
            "label": label,
            "what": "eval",
            "model": args.model,
            "template": args.template,
            "sample": args.sample,
            "token_budget": args.token_budget if label == "pcctune eval" else None,
            "seconds": times[label],
            "mean_s": sum(times[label]) / args.repeats,
            "ratio_vs_st": peer / (sum(times[label]) / args.repeats),
            "sts": scores[label],
        }
        for label in times
    ]


# --- 2. training step -------------------------------------------------------------------------------


def train_step_seconds(args: argparse.Namespace) -> dict:
    """Seconds per step of ``--loss`` in the trainer (the first step, a warm-up, not counted)."""
    from pcctune.modeling.adapters import AdapterConfig
    from pcctune.orchestration.pipeline import load_for_training
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.config import RunConfig, StageConfig
    from pcctune.training.stage import run_stage

    stage = StageConfig.model_validate(
        {
            "name": args.loss,
            "loss": args.loss,
            "data": {"source": "stage2", "rescale_sick": True},
            "batch_size": args.batch,
            "max_steps": args.steps,
            "dev": "none",
            "logging_steps": 1,
            "eval_steps": args.steps,
            "learning_rate": 2e-5,
        }
    )
    work = Path(tempfile.mkdtemp())
    adapter = AdapterConfig(kind="qlora", r=64, alpha=16) if args.qlora else AdapterConfig()
    run_config = RunConfig(
        model=args.model, template=args.template, adapter=adapter, onednn=args.onednn == "on", seed=1, stages=[stage]
    )
    model = load_for_training(run_config, None)
    result = run_stage(model, stage, run_config, work / args.loss, resolve_senteval_dir(args.data))
    stamps = [entry["train_runtime"] for entry in result.log_history if "train_runtime" in entry]
    timing = {"seconds_per_step": stamps[-1] / args.steps, "peak_mb": result.cost.peak_memory_mb}
    return {"loss": args.loss, **timing, "steps": args.steps, "batch": args.batch}


def _step_budget(args: argparse.Namespace) -> list[str]:
    """The flags that give a ``--one train-step`` process this run's model, template and budget."""
    template = ["--template", args.template] if args.template else []
    qlora = ["--qlora"] if args.qlora else []
    return ["--steps", str(args.steps), "--batch", str(args.batch), "--model", args.model, *template, *qlora]


def alternating_steps(args: argparse.Namespace, budget: list[str], variants: dict[str, list[str]]) -> dict[str, list]:
    """Each variant's ``--one train-step`` measurements (one fresh process each), the variants alternating within
    every repeat so that a drift in the machine's speed falls on all of them alike."""
    measured: dict[str, list[dict]] = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for name, flags in variants.items():
            _, last = run_python([str(HERE / "speed.py"), *budget, *flags, "--one", "train-step"])
            measured[name].append(json.loads(last))
            print(f"  {name}: {measured[name][-1]['seconds_per_step']:.3f} s/step (repeat {repeat + 1})", flush=True)
    return measured


def _mean_seconds(measurements: list[dict]) -> float:
    return sum(m["seconds_per_step"] for m in measurements) / len(measurements)


def step_rows(args: argparse.Namespace) -> Rows:
    budget = [*_step_budget(args), *data_flag(args)]
    runs = alternating_steps(args, budget, {loss: ["--loss", loss] for loss in ("pearson", "cosent")})
    cosent = _mean_seconds(runs["cosent"])
    return [
        {
            "label": f"{loss} step",
            "what": "train-step",
            "seconds_per_step": [m["seconds_per_step"] for m in measurements],
            "mean_s": _mean_seconds(measurements),
            "ratio_vs_cosent": _mean_seconds(measurements) / cosent,
            "batch": args.batch,
        }
        for loss, measurements in runs.items()
    ]


# --- 3. dev evaluation --------------------------------------------------------------------------------


def dev_evaluators(kind: str, pairs) -> dict[str, Any]:
    """The evaluator a stage used before (ST's) and the one it uses now, on one dev set."""
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from pcctune.training.dev import DevSTSEvaluator

    before = EmbeddingSimilarityEvaluator(
        [p.sentence1 for p in pairs],
        [p.sentence2 for p in pairs],
        [p.score for p in pairs],
        batch_size=64,
        main_similarity="cosine",
        name=kind,
        write_csv=False,
    )
    return {
        "EmbeddingSimilarityEvaluator (before)": before,
        "DevSTSEvaluator (now)": DevSTSEvaluator({kind: pairs}, kind),
    }


def dev_eval_rows(args: argparse.Namespace) -> Rows:
    from pcctune.data.dev import SINGLE_DEV_SETS, dev_parts
    from pcctune.modeling.build import build_model
    from pcctune.paths import resolve_senteval_dir

    model, senteval = build_model(args.model), resolve_senteval_dir(args.data)
    rows = []
    for dev_set in SINGLE_DEV_SETS:
        pairs = [pair for part in dev_parts(dev_set, senteval).values() for pair in part]
        evaluators = dev_evaluators(dev_set, pairs)
        seconds: dict[str, list[float]] = {label: [] for label in evaluators}
        scores = {}
        for _ in range(args.repeats * 2):
            for label, evaluator in evaluators.items():
                started = time.perf_counter()
                scores[label] = evaluator(model)[f"{dev_set}_spearman_cosine"] * 100
                seconds[label].append(time.perf_counter() - started)
        before = min(seconds["EmbeddingSimilarityEvaluator (before)"])
        for label in evaluators:
            best = min(seconds[label])
            rows.append(
                {
                    "label": f"{dev_set}: {label}",
                    "what": "dev-eval",
                    "seconds": seconds[label],
                    "best_s": best,
                    "ratio_vs_before": before / best,
                    "spearman": scores[label],
                    "pairs": len(pairs),
                }
            )
            print(f"  {dev_set} {label}: {best:.2f} s, Spearman {scores[label]:.4f}", flush=True)
    return rows


# --- 4. GradCache -------------------------------------------------------------------------------------


def gradcache_step(args: argparse.Namespace) -> dict:
    """One optimizer step of the Pearson loss over ``--pairs`` pairs (sentences cut at ``--max-seq-length``
    tokens, as the stage-2 configs do), timed after a warm-up step; peak RSS."""
    import torch

    from pcctune.data.stage2 import build_stage2_set
    from pcctune.losses.pearson import PearsonLoss
    from pcctune.modeling.build import build_model
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.memory import PeakMemory

    torch.manual_seed(0)
    model = build_model(args.model, max_seq_length=args.max_seq_length)
    model.train()
    rows = build_stage2_set(resolve_senteval_dir(args.data), rescale_sick=True).pairs
    group = [rows[i % len(rows)] for i in range(args.pairs[0])]
    features = [model.preprocess([p.sentence1 for p in group]), model.preprocess([p.sentence2 for p in group])]
    labels = torch.tensor([p.score for p in group])
    loss_fn = PearsonLoss(model, args.mini_batch or None)
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
    measured = {"pairs": args.pairs[0], "mini_batch": args.mini_batch or None, "seconds": seconds}
    return measured | {"peak_mb": memory.peak_mb, "memory_kind": memory.method, "max_seq_length": args.max_seq_length}


def _gradcache_one(args: argparse.Namespace, pairs: int, mini_batch: int | None) -> dict:
    sizes = ["--pairs", str(pairs), "--mini-batch", str(mini_batch or 0), "--max-seq-length", str(args.max_seq_length)]
    _, last = run_python(
        [str(HERE / "speed.py"), *sizes, "--model", args.model, *data_flag(args), "--one", "gradcache"]
    )
    measured = json.loads(last)
    print(f"  {pairs} pairs, mini-batch {mini_batch}: {measured['seconds']:.1f} s, {measured['peak_mb']:.0f} MB")
    return measured


def gradcache_rows(args: argparse.Namespace) -> Rows:
    """Plain and cached steps per group size; a plain step above ``--plain-max-pairs`` would not fit in memory."""
    rows = []
    for pairs in args.pairs:
        plain = _gradcache_one(args, pairs, None) if pairs <= args.plain_max_pairs else None
        cached = _gradcache_one(args, pairs, args.mini_batch)
        ratio = cached["seconds"] / plain["seconds"] if plain else None
        rows.append({"label": f"{pairs} pairs", "what": "gradcache", "plain": plain, "cached": cached, "ratio": ratio})
    return rows


# --- 5. tokens run through the model ------------------------------------------------------------------


def token_rows(args: argparse.Namespace) -> Rows:
    """The padded tokens each evaluation runs through the model (no timing): ST's evaluator encodes each side of
    each task in batches of 16 by character length; pcctune each distinct text once by token length within the
    token budget, a decoder's template prefix once. Their ratio bounds the speed-up that fewer tokens can give."""
    import numpy as np

    from pcctune.evaluation.protocols import senteval_text
    from pcctune.modeling.build import build_model
    from pcctune.modeling.encoding import default_token_budget, length_batches, token_lengths
    from pcctune.modeling.prefix_cache import cached_prefix, prefix_ids

    model = build_model(args.model, template=args.template)
    sides = [
        [senteval_text(getattr(p, side)) for p in t.pairs] for t in _tasks(args) for side in ("sentence1", "sentence2")
    ]
    st_tokens = 0
    for texts in sides:
        lengths = np.array(token_lengths(model, texts))[np.argsort([-len(t) for t in texts], kind="stable")]
        st_tokens += sum(int(lengths[i : i + 16].max()) * len(lengths[i : i + 16]) for i in range(0, len(texts), 16))
    unique = sorted({t for texts in sides for t in texts})
    lengths, budget = token_lengths(model, unique), args.token_budget or default_token_budget(model)
    prefix = len(prefix_ids(model)) if cached_prefix(model) is not None else 0
    ours = sum((lengths[b[0]] - prefix) * len(b) for b in length_batches(lengths, budget))
    counts = {"texts": sum(map(len, sides)), "distinct": len(unique), "prefix tokens": prefix}
    return [
        {"label": "ST evaluator", "what": "tokens", "tokens": st_tokens, **counts},
        {"label": f"pcctune (budget {budget})", "what": "tokens", "tokens": ours, "ratio": st_tokens / ours, **counts},
    ]


# --- 6. kernels ---------------------------------------------------------------------------------------


KERNELS = {"on": "oneDNN (onednn: true)", "off": "torch's default (onednn: false)"}


def kernel_rows(args: argparse.Namespace) -> Rows:
    """``--loss`` steps with the linear layers by oneDNN against torch's default kernel, alternating."""
    budget = [*_step_budget(args), "--loss", args.loss, *data_flag(args)]
    runs = alternating_steps(args, budget, {label: ["--onednn", kernel] for kernel, label in KERNELS.items()})
    default = _mean_seconds(runs[KERNELS["off"]])
    setting = f"{args.loss} step, {args.model}{', QLoRA' if args.qlora else ''}, batch {args.batch}"
    return [
        {
            "label": f"{setting}: {label}",
            "what": "kernels",
            "seconds_per_step": [m["seconds_per_step"] for m in measurements],
            "mean_s": _mean_seconds(measurements),
            "speedup": default / _mean_seconds(measurements),
            "peak_mb": max(m["peak_mb"] for m in measurements),  # each process's peak RSS
            "batch": args.batch,
        }
        for label, measurements in runs.items()
    ]


# --- tables -------------------------------------------------------------------------------------------


def eval_table(rows: Rows) -> ScoreTable:
    table = ScoreTable("evaluation", ["mean s", "× faster than ST", *STS_COLUMNS], first_column="command")
    for r in rows:
        cells = {"mean s": f"{r['mean_s']:.1f}", "× faster than ST": f"{r['ratio_vs_st']:.2f}", **r["sts"]}
        table.rows.append((f"{r['label']} ({r['model']})", cells))
    return table


def step_table(rows: Rows) -> ScoreTable:
    table = ScoreTable("steps", ["s/step", "× CoSENT"], first_column="step")
    for r in rows:
        table.rows.append((r["label"], {"s/step": f"{r['mean_s']:.3f}", "× CoSENT": f"{r['ratio_vs_cosent']:.3f}"}))
    return table


def dev_table(rows: Rows) -> ScoreTable:
    columns = ["pairs", "best s", "× faster than before", "Spearman × 100"]
    table = ScoreTable("dev", columns, first_column="evaluator")
    for r in rows:
        values = [r["pairs"], f"{r['best_s']:.2f}", f"{r['ratio_vs_before']:.2f}", f"{r['spearman']:.4f}"]
        table.rows.append((r["label"], dict(zip(columns, values, strict=True))))
    return table


def gradcache_table(rows: Rows) -> ScoreTable:
    columns = ["plain s", "cached s", "cached / plain", "plain MB", "cached MB"]
    table = ScoreTable("gradcache", columns, first_column="group")
    for r in rows:
        plain, cached = r["plain"], r["cached"]
        values = [
            f"{plain['seconds']:.1f}" if plain else "does not fit",
            f"{cached['seconds']:.1f}",
            f"{r['ratio']:.2f}" if r["ratio"] else None,
            f"{plain['peak_mb']:.0f}" if plain else None,
            f"{cached['peak_mb']:.0f}",
        ]
        table.rows.append((r["label"], dict(zip(columns, values, strict=True))))
    return table


def token_table(rows: Rows) -> ScoreTable:
    columns = ["texts", "padded tokens run", "ST tokens / these"]
    table = ScoreTable("tokens", columns, first_column="path")
    for r in rows:
        texts = f"{r['distinct']:,} distinct" if "ratio" in r else f"{r['texts']:,}"
        values = [texts, f"{r['tokens']:,}", f"{r['ratio']:.3f}" if "ratio" in r else "1"]
        table.rows.append((r["label"], dict(zip(columns, values, strict=True))))
    return table


def kernel_table(rows: Rows) -> ScoreTable:
    table = ScoreTable("kernels", ["s/step", "× torch's default", "peak MB"], first_column="step")
    for r in rows:
        peak = f"{r['peak_mb']:.0f}" if r.get("peak_mb") else "—"  # rows recorded before session 14's peak
        cells = {"s/step": f"{r['mean_s']:.3f}", "× torch's default": f"{r['speedup']:.2f}", "peak MB": peak}
        table.rows.append((r["label"], cells))
    return table


# --only's name of each part: how it measures, how it tabulates, and the ``what`` of its rows
PARTS = {
    "eval": (eval_rows, eval_table, "eval"),
    "steps": (step_rows, step_table, "train-step"),
    "dev-eval": (dev_eval_rows, dev_table, "dev-eval"),
    "gradcache": (gradcache_rows, gradcache_table, "gradcache"),
    "tokens": (token_rows, token_table, "tokens"),
    "kernels": (kernel_rows, kernel_table, "kernels"),
}


def table(rows: Rows, details: dict[str, Any]) -> str:
    tables = [make([r for r in rows if r["what"] == what]) for _, make, what in PARTS.values()]
    return "\n\n".join(t.to_markdown() for t in tables if t.rows)


def measure(args: argparse.Namespace) -> Measured:
    rows: Rows = []
    for part in args.only:
        print(f"{part}:", flush=True)
        rows += PARTS[part][0](args)
        save_rows(args.output, "speed", rows, "label")
    settings = (
        f"machine: {os.cpu_count()} CPU cores, torch threads default; model {args.model}"
        f"{', template ' + args.template if args.template else ''}; "
        f"{'sample of ' + str(args.sample) + ' pairs per task' if args.sample else 'full test sets'}; "
        f"{args.repeats} alternating repeats; command: python benchmarks/speed.py {' '.join(sys.argv[1:])}"
    )
    return Measured(rows, settings)


ONE = {
    "st-evaluator": st_evaluator_scores,
    "pcctune-eval": pcctune_eval_scores,
    "train-step": train_step_seconds,
    "gradcache": gradcache_step,
}


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=list(PARTS), nargs="+", default=list(PARTS))
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--template", default=None)
    parser.add_argument("--sample", type=int, default=None, help="pairs per task (a seeded sample) for a quick run")
    parser.add_argument("--token-budget", type=int, default=None, help="pcctune's padded tokens per batch (eval)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--loss", default="pearson")
    parser.add_argument("--qlora", action="store_true", help="train steps on an NF4 base with LoRA r = 64 (QLoRA)")
    parser.add_argument("--onednn", choices=list(KERNELS), default="on", help="linear layers' kernel of a train step")
    parser.add_argument("--pairs", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--mini-batch", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=64, help="token cap of the GradCache measurements")
    parser.add_argument(
        "--plain-max-pairs",
        type=int,
        default=1024,
        help="largest group a plain (uncached) step is tried at: 4,096 pairs need ~80 GB here",
    )
    parser.add_argument("--one", choices=list(ONE), default=None, help="one measurement, printed as JSON (internal)")


QUICK = {
    "model": "{bert}",
    "repeats": 1,
    "steps": 2,
    "batch": 2,
    "pairs": [8],
    "mini_batch": 4,
    "plain_max_pairs": 8,
    "max_seq_length": 16,
}  # --quick: every code path on tiny random models
BENCHMARK = Benchmark.of(__name__, quick=QUICK)

if __name__ == "__main__":
    if "--one" in sys.argv:  # a single measurement in this fresh process; its JSON is the last line printed
        arguments_of_one = parse(BENCHMARK)
        print(json.dumps(ONE[arguments_of_one.one](arguments_of_one)))
    else:
        run(BENCHMARK)
