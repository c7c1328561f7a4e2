"""The untrained encoders every claim compares against, on the full test sets (SimCSE protocol): all-MiniLM-L6-v2
on the seven STS tasks and SentEval's seven transfer tasks, and all-mpnet-base-v2 on the STS tasks.

One ``pcctune eval`` each, its record kept in ``records/`` (a missing one is scored).

``--quick`` scores a tiny BERT in its place (the transfer tasks on a miniature set).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reproductions._common import Measured, Step, claim, record_row, run_steps, sts_table


def steps(args: argparse.Namespace) -> list[Step]:
    out = ("--output", "{record}")
    return [
        Step("minilm_simcse", (("eval", args.minilm, *out),)),
        Step("mpnet_simcse", (("eval", args.mpnet, *out),)),
        Step("minilm_transfer", (("eval", args.minilm, "--tasks", "transfer", *out),)),
    ]


def measure(args: argparse.Namespace) -> Measured:
    records = run_steps(steps(args), args.output, args.runs, args.data)
    labels = {"minilm_simcse": "all-MiniLM-L6-v2", "mpnet_simcse": "all-mpnet-base-v2"}
    rows = [record_row(label, name, records[name]) for name, label in labels.items()]
    transfer = records["minilm_transfer"]
    return Measured(rows, "SimCSE protocol, fp32", {"transfer": getattr(transfer, "transfer", None)})


def table(rows, details) -> str:
    transfer = details.get("transfer") or {}
    lines = ["", "all-MiniLM-L6-v2 on the transfer tasks (accuracy %, logistic-regression probe):", ""]
    lines += ["| " + " | ".join(transfer) + " |", "|" + " --- |" * len(transfer)]
    lines += ["| " + " | ".join(f"{value:.2f}" for value in transfer.values()) + " |"]
    return sts_table(rows, details) + ("\n" + "\n".join(lines) if transfer else "")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minilm", default="all-MiniLM-L6-v2")
    parser.add_argument("--mpnet", default="all-mpnet-base-v2")
    parser.add_argument("--runs", type=Path, default=Path("runs/baselines"), help="scratch (unused: no training)")


def tiny_transfer(args: argparse.Namespace, tiny) -> None:
    """--quick: the miniature transfer tasks beside the miniature STS sets."""
    from pcctune.testing import write_mini_transfer

    write_mini_transfer(tiny.senteval)


QUICK = {"runs": "{senteval}/../runs", "minilm": "{bert}", "mpnet": "{bert}"}  # --quick: a tiny BERT in both places
BENCHMARK = claim(__name__, quick=QUICK, label_key="row", prepare_quick=tiny_transfer)
