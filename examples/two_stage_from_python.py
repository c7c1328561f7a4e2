"""Pcc-tuning's two stages from Python: InfoNCE on NLI triplets (eq. 7), then 1 − Pearson on the filtered
stage-2 set (eq. 8), continuing the same model; the same run ``pcctune train CONFIG`` makes.

    python examples/two_stage_from_python.py --model all-MiniLM-L6-v2 --data DIR --output runs/two_stage
"""

from __future__ import annotations

import argparse

import pcctune


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data", default=None, help="SentEval folder (default: $PCCTUNE_DATA, else the cached copy)")
    parser.add_argument("--output", default="runs/example_two_stage")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-steps", type=int, default=100)
    args = parser.parse_args()

    budget = {"batch_size": args.batch_size, "max_steps": args.max_steps, "dev": "none"}
    config = pcctune.RunConfig.model_validate(
        {
            "model": args.model,
            "data_dir": args.data,
            "output_dir": args.output,
            "evaluate_before": False,
            "stages": [
                {"name": "nli", "loss": "infonce", "data": {"source": "snli"}, "learning_rate": 5e-5, **budget},
                {"name": "pcc", "loss": "pearson", "data": {"source": "stage2", "rescale_sick": True}, **budget},
            ],
        }
    )
    result = pcctune.train(config, overwrite=True)
    for stage, scores in result.sts_by_stage.items():
        print(stage, {"avg": round(scores["avg"], 2)})


if __name__ == "__main__":
    main()
