"""The untrained encoders every claim compares against, on the full test sets (SimCSE protocol): all-MiniLM-L6-v2
on the seven STS tasks and SentEval's seven transfer tasks, and all-mpnet-base-v2 on the STS tasks.

One ``pcctune eval`` each, its record kept in ``records/`` (a missing one is scored).

``--quick`` scores a tiny BERT in their place (the STS tasks only).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reproductions._common import Measured, Step, claim, record_row, run_steps, sts_table


def steps(args: argparse.Namespace) -> list[Step]:
    out = ("--output", "{record}")
    found = [Step("minilm_simcse", (("eval", args.minilm, *out),)), Step("mpnet_simcse", (("eval", args.mpnet, *out),))]
    if args.transfer:
        found.append(Step("minilm_transfer", (("eval", args.minilm, "--tasks", "transfer", *out),)))
    return found


def measure(args: argparse.Namespace) -> Measured:
    records = run_steps(steps(args), args.output, args.runs, args.data)
    labels = {"minilm_simcse": "all-MiniLM-L6-v2", "mpnet_simcse": "all-mpnet-base-v2"}
    rows = [record_row(label, name, records[name]) for name, label in labels.items()]
    transfer = getattr(records.get("minilm_transfer"), "transfer", None)
    return Measured(rows, "SimCSE protocol, fp32", {"transfer": transfer})


def table(rows, details) -> str:
    transfer = details.get("transfer") or {}
    lines = ["", "all-MiniLM-L6-v2 on the transfer tasks (accuracy %, logistic-regression probe):", ""]
    lines += ["| " + " | ".join(transfer) + " |", "|" + " --- |" * len(transfer)]
    lines += ["| " + " | ".join(f"{value:.2f}" for value in transfer.values()) + " |"]
    return sts_table(rows, details) + ("\n" + "\n".join(lines) if transfer else "")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minilm", default="all-MiniLM-L6-v2")
    parser.add_argument("--mpnet", default="all-mpnet-base-v2")
    parser.add_argument("--transfer", action=argparse.BooleanOptionalAction, default=True, help="the transfer tasks")
    parser.add_argument("--runs", type=Path, default=Path("runs/baselines"), help="scratch (unused: no training)")


QUICK = {"runs": "{senteval}/../runs", "minilm": "{bert}", "mpnet": "{bert}", "transfer": False}
"""--quick: a tiny BERT in both places; the transfer probes' quick run is ``transfer_probe``'s."""
BENCHMARK = claim(__name__, quick=QUICK, label_key="row")
