"""The dev evaluator that selects a stage's checkpoints (a filtered dev set, never a test set)."""

from __future__ import annotations

from pathlib import Path

from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from pcctune.data.dev import dev_pairs


def dev_evaluator(kind: str, senteval_dir: Path) -> EmbeddingSimilarityEvaluator | None:
    """sentence-transformers' evaluator on dev set ``kind`` (test pairs removed), or ``None`` for ``none``."""
    if kind == "none":
        return None
    pairs = dev_pairs(kind, senteval_dir)
    return EmbeddingSimilarityEvaluator(
        [p.sentence1 for p in pairs],
        [p.sentence2 for p in pairs],
        [p.score for p in pairs],
        batch_size=64,
        main_similarity="cosine",
        name=kind,
        write_csv=False,
    )


def dev_metric(kind: str) -> str | None:
    """The trainer's name for the dev score of ``kind`` (what ``metric_for_best_model`` selects on)."""
    return None if kind == "none" else f"eval_{kind}_spearman_cosine"
