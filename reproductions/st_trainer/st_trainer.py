"""The Pearson loss in a plain sentence-transformers trainer script gives what ``pcctune train`` gives.

``examples/pearson_st_trainer.py`` is an ordinary ``SentenceTransformerTrainer`` script that uses three pcctune
names (``stage2_dataset``, ``PearsonLoss``, ``DevSTSEvaluator.named``); its defaults are the settings of
``configs/minilm_stage2.yaml``. Both run, each result kept in ``records/`` (a missing one runs): the run's record
(``pcctune_train.json``) and the line the script prints (``example_output.txt``, two decimals).

``--quick`` runs both on a tiny BERT for two steps.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from benchmarks._common import run_measured
from reproductions._common import STS_COLUMNS, Measured, Step, claim, overrides, record_row, run_steps, sts_table

from pcctune.io import write_text


def example_scores(args: argparse.Namespace) -> dict[str, float]:
    """The script's seven numbers: run it when its output is not kept yet."""
    kept = args.output / "records" / "example_output.txt"
    if not kept.is_file():
        flags = ["--model", args.model, "--output", str(args.runs / "example"), *args.example_flags]
        line = run_measured(
            ["examples/pearson_st_trainer.py", *flags, *(["--data", args.data] if args.data else [])]
        ).last
        write_text(kept, line + "\n")
    return ast.literal_eval(kept.read_text().strip())


def measure(args: argparse.Namespace) -> Measured:
    train = ("train", "configs/minilm_stage2.yaml", "--set", f"model={args.model}", *overrides(args.settings))
    records = run_steps([Step("pcctune_train", (train,))], args.output, args.runs, args.data)
    ours = record_row("`pcctune train configs/minilm_stage2.yaml`", "pcctune_train", records["pcctune_train"], "pcc")
    theirs = {"row": "`examples/pearson_st_trainer.py`", "record": "example_output.txt", "pairs": ours["pairs"]}
    theirs |= {"sts": example_scores(args), "pairs_from": "the script scores the full test sets (its own line)"}
    for row in (ours, theirs):  # the script prints two decimals: compare at that rounding
        row["sts"] = {column: round(row["sts"][column], 2) for column in STS_COLUMNS}
    return Measured([ours, theirs], "all-MiniLM-L6-v2, seed 1, the ready config's settings; SimCSE protocol")


table = sts_table  # the seven tasks and their average, a row per record


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--runs", type=Path, default=Path("runs/st_trainer"), help="the run folders (scratch)")
    parser.add_argument("--settings", nargs="*", default=[], help="KEY=VALUE overrides of the pcctune run")
    parser.add_argument("--example-flags", nargs="*", default=[], help="flags of the example script")


QUICK = {
    "runs": "{senteval}/../runs",
    "model": "{bert}",
    "settings": ["stages.0.max_steps=2", "stages.0.batch_size=2", "stages.0.eval_steps=1"],
    "example_flags": ["--max-steps", "2", "--batch-size", "2", "--eval-steps", "1"],
}  # --quick: both on a tiny BERT
BENCHMARK = claim(__name__, quick=QUICK, label_key="row")
