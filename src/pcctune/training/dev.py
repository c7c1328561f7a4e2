"""The dev evaluator that selects a stage's checkpoints (a filtered dev set, never a test set).

It scores like sentence-transformers' ``EmbeddingSimilarityEvaluator`` (Spearman and Pearson of
the cosine similarity, metric names ``{name}_spearman_cosine`` …) but encodes through pcctune's
fast path (:mod:`pcctune.modeling.encoding`): each distinct sentence once, batched by token
length, sharded across processes under DDP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from pcctune.correlation import score_pairs
from pcctune.data.cache import senteval_folder
from pcctune.data.dev import dev_parts, size_weighted
from pcctune.data.sts import STSPair
from pcctune.modeling.encoding import encode_unique


class DevSTSEvaluator(SentenceEvaluator):
    """Cosine-similarity correlations with the gold scores of one or more dev sets.

    With one set the metrics are ``{name}_spearman_cosine`` and ``{name}_pearson_cosine``. With
    several (``sick-trial+stsb-dev``) each set is scored on its own (``{name}_{part}_…``) and the
    primary metric is their mean weighted by pair count (:func:`pcctune.data.dev.size_weighted`).
    """

    def __init__(self, parts: dict[str, list[STSPair]], name: str) -> None:
        super().__init__()
        self.parts = parts
        self.name = name
        self.primary_metric = f"{name}_spearman_cosine"

    @classmethod
    def named(cls, dev_set: str = "sick-trial+stsb-dev", data: str | Path | None = None) -> DevSTSEvaluator:
        """The evaluator pcctune's stages select checkpoints with: ``sick-trial``, ``stsb-dev-filtered`` or both
        (``sick-trial+stsb-dev``), every pair found in a test set removed; ``data``: the SentEval folder."""
        return cls(dev_parts(dev_set, senteval_folder(data)), dev_set)

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: float = -1, steps: int = -1
    ) -> dict[str, float]:
        texts = [s for pairs in self.parts.values() for p in pairs for s in (p.sentence1, p.sentence2)]
        vectors = encode_unique(model, texts, show_progress=False, shard=False)  # only rank 0 runs an evaluator
        scores = {part: score_pairs(vectors, pairs) for part, pairs in self.parts.items()}
        if len(scores) == 1:
            (only,) = scores.values()
            metrics = {f"{self.name}_pearson_cosine": only.pearson, f"{self.name}_spearman_cosine": only.spearman}
        else:
            metrics = {f"{self.name}_{part}_spearman_cosine": r.spearman for part, r in scores.items()}
            for statistic in ("pearson", "spearman"):
                weighted = size_weighted({part: getattr(r, statistic) for part, r in scores.items()}, self.parts)
                metrics[f"{self.name}_{statistic}_cosine"] = weighted
        self.store_metrics_in_model_card_data(model, metrics, int(epoch), steps)
        return metrics


def dev_evaluator(dev_set: str, senteval_dir: Path) -> DevSTSEvaluator | None:
    """The evaluator of dev set ``dev_set`` (test pairs removed), or ``None`` for ``none``."""
    if dev_set == "none":
        return None
    return DevSTSEvaluator.named(dev_set, senteval_dir)


def dev_metric(dev_set: str) -> str | None:
    """The trainer's name for the dev score of ``dev_set`` (what ``metric_for_best_model`` selects on)."""
    return None if dev_set == "none" else f"eval_{dev_set}_spearman_cosine"
