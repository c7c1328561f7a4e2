"""The two STS evaluation protocols on the full test sets: ``simcse-senteval`` (SentEval's text as given) against
``paper`` (the Moses-tokenized, lowercased STS12–16 and STS-B text and the papers' sentence edits under a template).

One ``pcctune eval`` per model and protocol, each record kept in ``records/`` (a missing one is scored):
all-MiniLM-L6-v2 (no template) and SmolLM2-135M zero-shot under PromptEOL.

``--quick`` scores a tiny BERT and a tiny Llama (with PromptEOL) under both protocols.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reproductions._common import Measured, Step, claim, record_row, run_steps, sts_table

PROTOCOLS = {"simcse": "simcse-senteval", "paper": "paper"}


def steps(args: argparse.Namespace) -> list[Step]:
    models = {"minilm": (args.encoder,), "smollm2_eol": (args.decoder, "--template", "eol")}
    return [
        Step(f"{model}_{short}", (("eval", *argv, "--protocol", protocol, "--output", "{record}"),))
        for model, argv in models.items()
        for short, protocol in PROTOCOLS.items()
    ]


def measure(args: argparse.Namespace) -> Measured:
    records = run_steps(steps(args), args.output, args.runs, args.data)
    labels = {"minilm": "all-MiniLM-L6-v2", "smollm2_eol": "SmolLM2-135M, PromptEOL, zero-shot"}
    rows = [
        record_row(f"{labels[name.rsplit('_', 1)[0]]} · {PROTOCOLS[name.rsplit('_', 1)[1]]}", name, record)
        for name, record in records.items()
    ]
    return Measured(rows, "fp32; each row one `pcctune eval` (python -m reproductions protocols)")


table = sts_table  # the seven tasks and their average, a row per record


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--decoder", default="smollm2-135m")
    parser.add_argument("--runs", type=Path, default=Path("runs/protocols"), help="scratch (unused: no training)")


QUICK = {
    "runs": "{senteval}/../runs",
    "encoder": "{bert}",
    "decoder": "{llama}",
}  # --quick: both protocols on tiny random models
BENCHMARK = claim(__name__, quick=QUICK, label_key="row")
