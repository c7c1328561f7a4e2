"""Pearson loss of Pcc-tuning (Zhang and Li, "Pcc-tuning", §3, eq. 8): ℓ = 1 − r(X, Y).

X are the cosine similarities of the pairs' embeddings, Y their gold scores, and r is Pearson's
correlation over the **whole global batch** (the "Pearson group"): (cos, gold) are gathered from
every process with gradients, and with ``mini_batch_size`` set the embeddings are computed
GradCache-style (sentence-transformers' ``CachedLossMixin``), so a group of thousands of pairs
fits in the memory of one mini-batch. The group is then the trainer's global batch, which no
longer needs gradient accumulation: see ``pcctune.training.batching``.

Unlike the reference code, r uses one consistent estimator (sums of products, so the 1/n or
1/(n−1) factors cancel; the reference mixes them and computes r·(n−1)/n), accumulates in fp32,
and is defined everywhere: a constant gold vector (or a single pair) gives r = 0, so ℓ = 1 with
zero gradient, and a warning says so; a NaN gold score is an error.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn
from typing_extensions import override

from pcctune.losses import citations
from pcctune.losses.base import EmbeddingLoss, at_least_fp32, global_pair_cosines

EPS = 1e-12  # under each square root of r's denominator: r = 0, not NaN, for a constant vector


def pearson_r(x: Tensor, y: Tensor, eps: float = EPS) -> Tensor:
    """Pearson's r = Σ(x−x̄)(y−ȳ) / (√(Σ(x−x̄)² + ε) · √(Σ(y−ȳ)² + ε)), in fp32 or wider."""
    x = at_least_fp32(x)
    y = at_least_fp32(y).to(x.dtype)
    xc = x - x.mean()
    yc = y - y.mean()
    return (xc * yc).sum() / (torch.sqrt((xc * xc).sum() + eps) * torch.sqrt((yc * yc).sum() + eps))


def check_gold(gold: Tensor) -> None:
    """Reject scores that are not finite (NaN, ±inf); warn when the group cannot define a correlation."""
    if not torch.isfinite(gold).all():
        raise ValueError("Pearson loss: gold scores contain NaN or infinity; clean the training data")
    if gold.numel() < 2:
        warnings.warn(
            "Pearson loss: a group of one pair has no correlation; loss is 1 with zero gradient", stacklevel=3
        )
    elif torch.all(gold == gold[0]):
        warnings.warn(
            "Pearson loss: all gold scores of the group are equal; loss is 1 with zero gradient", stacklevel=3
        )


def global_scored_cosines(u: Tensor, v: Tensor, gold: Tensor) -> tuple[Tensor, Tensor]:
    """cos(u, v) and gold over the pairs of every process, the gold checked (``check_gold``)."""
    cos_all, gold_all = global_pair_cosines(u, v, gold)
    check_gold(gold_all)
    return cos_all, gold_all


def scored_pair_columns(columns: list[Tensor], labels: Tensor | None, loss: str) -> tuple[Tensor, Tensor, Tensor]:
    """The (sentence1, sentence2) embeddings and gold scores a scored-pair loss named ``loss`` was given.

    A second label column (the source, for ``group_by_source``) is dropped."""
    if len(columns) != 2 or labels is None:
        raise ValueError(f"{loss} expects (sentence1, sentence2) columns and a score label")
    return columns[0], columns[1], labels[:, 0] if labels.ndim == 2 else labels


def pearson_loss(u: Tensor, v: Tensor, gold: Tensor, eps: float = EPS) -> Tensor:
    """1 − r(cos(u, v), gold) over the pairs of every process (eq. 8)."""
    return 1.0 - pearson_r(*global_scored_cosines(u, v, gold), eps)


class PearsonLoss(EmbeddingLoss):
    """Pcc-tuning's stage-2 loss: 1 − Pearson(cosine similarity, gold score) over the global batch.

    Args:
        model: the SentenceTransformer being trained.
        mini_batch_size: embed in mini-batches of this size and cache gradients (GradCache), so
            memory does not grow with the group size; ``None`` embeds the batch at once.
        eps: added under each square root of the correlation's denominator.

    Inputs: (sentence1, sentence2) pairs with a float score label (any scale; r is scale-invariant).

    Examples:
        ```python
        loss = PearsonLoss(model, mini_batch_size=32)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=pairs, loss=loss, args=args)
        ```
    """

    citation = citations.PCC_TUNING

    def __init__(self, model: nn.Module, mini_batch_size: int | None = None, eps: float = EPS) -> None:
        super().__init__(model, mini_batch_size)
        self.eps = eps

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        return pearson_loss(*scored_pair_columns(columns, labels, "Pearson loss"), self.eps)

    def get_config_dict(self) -> dict:
        """Its settings, as sentence-transformers' model card prints them."""
        return {"mini_batch_size": self.mini_batch_size, "eps": self.eps}
