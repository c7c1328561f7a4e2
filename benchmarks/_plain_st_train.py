"""The demo's training stage as a plain sentence-transformers script, with no pcctune in it.

The peer of ``pcctune train configs/demo_minilm.yaml`` in ``benchmarks/speed.py --only train``: what a user would
run instead. sentence-transformers' trainer with its own ``CosineSimilarityLoss`` (the gold scores ÷ 5, as its
STS-B training example does), the same pairs, seed and settings; its ``EmbeddingSimilarityEvaluator`` on each dev
set every ``--eval-steps`` steps, the checkpoint with the best dev Spearman (the dev sets' mean weighted by their
pair counts) loaded at the end; the same evaluator on the seven test sets before and after training; the final
model saved. The data are files that ``speed.py`` writes beforehand, so this script only reads:

    DATA/train.jsonl        {"sentence1", "sentence2", "score"} (0–5), in the order pcctune trains on them
    DATA/dev/NAME.jsonl     each dev set
    DATA/test/NAME.jsonl    each of the seven test sets, its sentences as SentEval reads them
    DATA/sets.json          {"dev": [NAME, ...], "test": [NAME, ...]}

The last line printed is JSON: the seconds of each part (the trainer's ``train_runtime``, its dev evaluations'
``eval_runtime``, the two test evaluations), the steps, the best dev Spearman and the test scores (× 100).

    python benchmarks/_plain_st_train.py --model MODEL_FOLDER --data DATA --output OUT
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator, SequentialEvaluator
from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

MAX_SCORE = 5.0


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluator(path: Path, batch_size: int) -> EmbeddingSimilarityEvaluator:
    """ST's evaluator of one set (Spearman of the cosine similarity is its primary metric)."""
    rows = read_jsonl(path)
    return EmbeddingSimilarityEvaluator(
        [r["sentence1"] for r in rows],
        [r["sentence2"] for r in rows],
        [r["score"] for r in rows],
        batch_size=batch_size,
        main_similarity="cosine",
        name=path.stem,
        write_csv=False,
    )


def test_scores(model: SentenceTransformer, tests: list[EmbeddingSimilarityEvaluator]) -> tuple[dict, float]:
    """Each test set's Spearman × 100 and their mean, and the seconds the evaluations took."""
    started = time.perf_counter()
    scores = {test.name: test(model)[f"{test.name}_spearman_cosine"] * 100 for test in tests}
    return scores | {"avg": sum(scores.values()) / len(scores)}, time.perf_counter() - started


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a sentence-transformers model folder or Hub id")
    parser.add_argument("--data", type=Path, required=True, help="the folder of files described above")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--epochs", type=float, default=1)
    parser.add_argument("--max-steps", type=int, default=-1)
    parser.add_argument("--max-seq-length", type=int, default=None, help="while training (else, the model's)")
    parser.add_argument("--eval-steps", type=int, default=40)
    parser.add_argument("--logging-steps", type=int, default=5)
    parser.add_argument("--save-total-limit", type=int, default=2)
    parser.add_argument("--eval-batch-size", type=int, default=64, help="the evaluator's batch")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def trainer_of(
    model: SentenceTransformer, args: argparse.Namespace, dev: SequentialEvaluator
) -> SentenceTransformerTrainer:
    """The trainer: the training pairs' scores ÷ 5 for the cosine loss, the best dev checkpoint loaded at the end."""
    rows = read_jsonl(args.data / "train.jsonl")
    columns = {side: [r[side] for r in rows] for side in ("sentence1", "sentence2")}
    train = Dataset.from_dict(columns | {"score": [r["score"] / MAX_SCORE for r in rows]})
    training_args = SentenceTransformerTrainingArguments(
        output_dir=str(args.output / "checkpoints"),
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        warmup_steps=args.warmup_ratio,  # a float below 1 is a ratio of the steps in transformers 5
        seed=args.seed,
        data_seed=args.seed,
        eval_strategy="steps",
        eval_steps=args.eval_steps,
        save_strategy="steps",
        save_steps=args.eval_steps,
        save_total_limit=args.save_total_limit,
        load_best_model_at_end=True,
        metric_for_best_model="eval_sequential_score",
        greater_is_better=True,
        logging_steps=args.logging_steps,
        dataloader_drop_last=True,
        report_to="none",
    )
    loss = CosineSimilarityLoss(model)
    return SentenceTransformerTrainer(model=model, args=training_args, train_dataset=train, loss=loss, evaluator=dev)


def main() -> None:
    args = arguments()
    model = SentenceTransformer(args.model)
    sets = json.loads((args.data / "sets.json").read_text(encoding="utf-8"))
    tests = [evaluator(args.data / "test" / f"{name}.jsonl", args.eval_batch_size) for name in sets["test"]]
    devs = [evaluator(args.data / "dev" / f"{name}.jsonl", args.eval_batch_size) for name in sets["dev"]]
    sizes = [len(dev.scores) for dev in devs]
    weighted = SequentialEvaluator(devs, lambda s: sum(x * n for x, n in zip(s, sizes, strict=True)) / sum(sizes))

    before, before_s = test_scores(model, tests)
    trainer = trainer_of(model, args, weighted)
    own_length, model.max_seq_length = model.max_seq_length, args.max_seq_length or model.max_seq_length
    trainer.train()
    model.max_seq_length = own_length
    model.save_pretrained(str(args.output / "final"))
    after, after_s = test_scores(model, tests)

    history, best = trainer.state.log_history, trainer.state.best_metric
    evaluations = [row["eval_runtime"] for row in history if "eval_runtime" in row]
    result: dict[str, object] = {"train_runtime_s": next(r["train_runtime"] for r in history if "train_runtime" in r)}
    result |= {"dev_eval_s": sum(evaluations), "test_eval_s": before_s + after_s, "steps": trainer.state.global_step}
    result |= {"dev_evaluations": len(evaluations), "best_dev": None if best is None else best * 100}
    print(json.dumps(result | {"sts_before": before, "sts_after": after}))


if __name__ == "__main__":
    main()
