"""Pcc-tuning's stage 2 (1 − Pearson over the batch, eq. 8) in a plain sentence-transformers trainer script.

    python examples/pearson_st_trainer.py --data DIR --output runs/example   # = configs/minilm_stage2.yaml

Everything but the pcctune names is the ordinary SentenceTransformerTrainer script; its defaults are the settings of
``configs/minilm_stage2.yaml``, and it gives the seven numbers ``pcctune train`` gives (reproductions/st_trainer/).
"""

from __future__ import annotations

import argparse

from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

import pcctune


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="packaged name, folder or Hub id")
    parser.add_argument("--data", default=None, help="SentEval folder (default: $PCCTUNE_DATA, else the cached copy)")
    parser.add_argument("--output", default="runs/example_pearson")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=-1, help="-1: --epochs")
    parser.add_argument("--epochs", type=float, default=2)
    parser.add_argument("--lr", type=float, default=8.520291476396697e-05)
    parser.add_argument("--eval-steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    model = pcctune.build_model(args.model, max_seq_length=128)
    train = pcctune.stage2_dataset(args.data, rescale_sick=True)  # leakage-filtered STS-B + SICK-R train
    dev = pcctune.DevSTSEvaluator.named("sick-trial+stsb-dev", args.data)  # checkpoint selection: dev sets only
    arguments = SentenceTransformerTrainingArguments(
        output_dir=args.output, per_device_train_batch_size=args.batch_size, num_train_epochs=args.epochs,
        max_steps=args.max_steps, learning_rate=args.lr, warmup_steps=0.1, seed=args.seed, data_seed=args.seed,
        eval_strategy="steps", eval_steps=args.eval_steps, save_steps=args.eval_steps, logging_steps=5,
        load_best_model_at_end=True, metric_for_best_model=f"eval_{dev.primary_metric}",
        dataloader_drop_last=True, report_to="none", use_cpu=True,
    )  # fmt: skip
    trainer = SentenceTransformerTrainer(
        model=model, args=arguments, train_dataset=train, loss=pcctune.PearsonLoss(model), evaluator=dev
    )
    trainer.train()
    result = pcctune.evaluate(model, data=args.data)  # the seven STS test sets, reported (never selected on)
    print({task: round(score, 2) for task, score in (result.sts or {}).items()})


if __name__ == "__main__":
    main()
