"""Any sentence-transformers model scored on the seven STS tasks under both named protocols: ``simcse-senteval``
(SentEval's text as given, as SimCSE reports) and ``paper`` (the tokenized text the papers read); with ``--template``
a decoder LLM is scored as PromptEOL/Pcc-tuning embed it (docs/evaluation.md).

    python examples/evaluate_both_protocols.py --model all-MiniLM-L6-v2 --data DIR --output runs/eval
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentence_transformers import SentenceTransformer

import pcctune


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="packaged name, folder or Hub id")
    parser.add_argument("--template", default=None, help="a prompt template for a decoder LLM, e.g. eol")
    parser.add_argument("--data", default=None, help="SentEval folder (default: $PCCTUNE_DATA, else the cached copy)")
    parser.add_argument("--output", default="runs/example_eval")
    args = parser.parse_args()

    model: SentenceTransformer = pcctune.build_model(args.model)  # or any SentenceTransformer you already hold
    if args.template:
        pcctune.apply_template(model, args.template)
    for protocol in ("simcse-senteval", "paper"):
        result = pcctune.evaluate(model, protocol=protocol, data=args.data)
        result.to_disk(Path(args.output) / f"eval.{protocol}.json")  # the record `pcctune eval` writes
        print(f"{protocol}:", {task: round(score, 2) for task, score in result.sts.items()})

    # The same scores as a sentence-transformers evaluator, e.g. for `evaluator=` in a SentenceTransformerTrainer.
    evaluator = pcctune.PccEvaluator(data=args.data, protocol="paper")
    print("PccEvaluator:", {"avg": round(evaluator(model)["sts_avg"], 2)})


if __name__ == "__main__":
    main()
