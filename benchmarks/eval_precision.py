"""Evaluation precision (docs/fidelity.md, point 3): one model scored on its unquantized base and on its NF4 base.

The authors train in 4-bit and evaluate on the 16-bit base (``--load_kbit 16``); pcctune's default does the same.
This prints both on the filtered dev sets (never a test set), with the wall time of each, in one run.

    python benchmarks/eval_precision.py --model smollm2-135m --template eol [--dev sick-trial+stsb-dev]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _common import Benchmark, Measured, Rows, run
from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.training.config import StageConfig
from pcctune.training.dev import dev_evaluator

PRECISIONS = {"16-bit base (fp32 weights)": None, "NF4 base (bitsandbytes)": {"quant_type": "nf4"}}


def measure(args: argparse.Namespace) -> Measured:
    # the dev set filtered as a stage-2 run filters it
    stage = StageConfig(name="dev", loss="pearson", data={"source": "stage2"}, dev=args.dev)
    evaluator = dev_evaluator(stage, resolve_senteval_dir(args.data))
    assert evaluator is not None
    rows = []
    for label, quantization in PRECISIONS.items():
        model = build_model(args.model, template=args.template, quantization=quantization)
        started = time.perf_counter()
        score = evaluator(model)[evaluator.primary_metric] * 100
        rows.append({"label": label, "dev": score, "seconds": time.perf_counter() - started})
    return Measured(rows, f"model {args.model}, template {args.template}, dev set {args.dev}")


def table(rows: Rows, details: dict[str, Any]) -> str:
    lines = ["| base | dev Spearman × 100 | seconds |", "| --- | --- | --- |"]
    return "\n".join(lines + [f"| {r['label']} | {r['dev']:.2f} | {r['seconds']:.0f} |" for r in rows])


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--template", default="eol")
    parser.add_argument("--dev", default="sick-trial+stsb-dev")


QUICK = {"model": "{llama}"}  # --quick: every code path on tiny random models
BENCHMARK = Benchmark.of(__name__, quick=QUICK, output="benchmarks/results/eval_precision")

if __name__ == "__main__":
    run(BENCHMARK)
