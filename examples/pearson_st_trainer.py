"""Pcc-tuning's stage 2 (1 − Pearson over the batch, eq. 8) in a plain sentence-transformers trainer script.

    python examples/pearson_st_trainer.py --model all-MiniLM-L6-v2 --data ../shared/data --output runs/example

Everything but the three pcctune names is the ordinary SentenceTransformerTrainer script.
"""

from __future__ import annotations

import argparse

from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import BatchSamplers

import pcctune


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="packaged name, folder or Hub id")
    parser.add_argument("--data", default=None, help="SentEval folder (default: $PCCTUNE_DATA, ../shared/data)")
    parser.add_argument("--output", default="runs/example_pearson")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-steps", type=int, default=-1, help="-1: one epoch")
    args = parser.parse_args()

    model = pcctune.build_model(args.model)
    train = pcctune.stage2_dataset(args.data, rescale_sick=True)  # leakage-filtered STS-B + SICK-R train
    trainer = SentenceTransformerTrainer(
        model=model,
        args=SentenceTransformerTrainingArguments(
            output_dir=args.output,
            per_device_train_batch_size=args.batch_size,
            max_steps=args.max_steps,
            learning_rate=2e-5,
            batch_sampler=BatchSamplers.BATCH_SAMPLER,
            dataloader_drop_last=True,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
        ),
        train_dataset=train,
        loss=pcctune.PearsonLoss(model),
    )
    trainer.train()
    result = pcctune.evaluate(model, data=args.data)  # the seven STS test sets, reported (never selected on)
    print({task: round(score, 2) for task, score in (result.sts or {}).items()})


if __name__ == "__main__":
    main()
