"""Evaluation precision (docs/fidelity.md, point 3): one model scored on its unquantized base and on its NF4 base.

The authors train in 4-bit and evaluate on the 16-bit base (``--load_kbit 16``); pcctune's default does the same.
This prints both on the filtered dev sets (never a test set), with the wall time of each, in one run.

    python benchmarks/eval_precision.py --model smollm2-135m --template eol [--dev sick-trial+stsb-dev]
"""

from __future__ import annotations

import argparse
import time

from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.training.dev import dev_evaluator

PRECISIONS = {"16-bit base (fp32 weights)": None, "NF4 base (bitsandbytes)": {"quant_type": "nf4"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--template", default="eol")
    parser.add_argument("--dev", default="sick-trial+stsb-dev")
    parser.add_argument("--data", default=None)
    args = parser.parse_args()
    evaluator = dev_evaluator(args.dev, resolve_senteval_dir(args.data))
    assert evaluator is not None
    print(f"| {args.model}, {args.template} | dev Spearman × 100 | seconds |\n| --- | --- | --- |")
    for label, quantization in PRECISIONS.items():
        model = build_model(args.model, template=args.template, quantization=quantization)
        started = time.perf_counter()
        score = evaluator(model)[evaluator.primary_metric] * 100
        print(f"| {label} | {score:.2f} | {time.perf_counter() - started:.0f} |")


if __name__ == "__main__":
    main()
