"""Pearson plus a calibration term: ℓ = (1 − r(cos, gold)) + λ · ℓ₂.

Pearson's r (Pcc-tuning eq. 8) is invariant to any affine map of the cosines, so it never asks a similarity
to *be* anything in particular: a batch may be perfectly correlated and still compress all
cosines into [0.7, 0.8]. A small second term anchors the scale without giving up the
correlation objective:

- ``mse``: ℓ₂ = mean (cos − gold / max_gold)² (sentence-transformers' CosineSimilarityLoss);
- ``cosent``: ℓ₂ = log(1 + Σ_{gold_i > gold_j} exp(s · (cos_j − cos_i))), s = 20 (CoSENT, Su 2022),
  a pairwise ranking term that is also a smooth surrogate of Spearman's inversions.

λ (``loss_weight``) is a stage option, searched like a learning rate.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import torch
from torch import Tensor, nn
from typing_extensions import override

from pcctune.losses import citations
from pcctune.losses.base import EmbeddingLoss, check_setting
from pcctune.losses.pearson import global_scored_cosines, pearson_r, scored_pair_columns

Extra = Literal["mse", "cosent"]
WEIGHT = 0.1
"""λ of the second term beside 1 − Pearson."""


def mse_term(cos: Tensor, gold: Tensor, max_gold: float) -> Tensor:
    """mean (cos − gold / max_gold)², sentence-transformers' CosineSimilarityLoss."""
    return ((cos - gold / max_gold) ** 2).mean()


def cosent_term(cos: Tensor, gold: Tensor, scale: float = 20.0) -> Tensor:
    """log(1 + Σ_{gold_i > gold_j} exp(scale · (cos_j − cos_i)))."""
    differences = scale * (cos[None, :] - cos[:, None])  # [i, j] = s · (cos_j − cos_i)
    ordered = gold[:, None] > gold[None, :]
    logits = torch.cat([differences.new_zeros(1), differences[ordered]])
    return torch.logsumexp(logits, dim=0)


class PearsonPlusLoss(EmbeddingLoss):
    """1 − r(cos, gold) + λ · (MSE or CoSENT) over the global batch: Pearson (Pcc-tuning eq. 8) with a term that
    anchors the cosines' scale.

    Args:
        model: the SentenceTransformer being trained.
        extra: the second term, ``mse`` (sentence-transformers' CosineSimilarityLoss) or ``cosent`` (CoSENTLoss).
        weight: λ, the second term's weight.
        max_gold: the gold scale's largest score; ``mse`` regresses the cosine on gold / ``max_gold``.
        mini_batch_size: GradCache mini-batch size, or ``None`` to embed the batch at once.

    Inputs: (sentence1, sentence2) pairs with a float score label.

    Examples:
        ```python
        loss = PearsonPlusLoss(model, extra="cosent", weight=0.1, mini_batch_size=32)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=pairs, loss=loss, args=args)
        ```
    """

    citation = citations.PCC_TUNING

    def __init__(
        self,
        model: nn.Module,
        extra: Extra = "mse",
        weight: float = WEIGHT,
        max_gold: float = 5.0,
        mini_batch_size: int | None = None,
    ) -> None:
        super().__init__(model, mini_batch_size)
        check_setting(extra in get_args(Extra), "extra", extra, " or ".join(get_args(Extra)))
        self.extra = extra
        self.weight = weight
        self.max_gold = max_gold

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        cos, gold = global_scored_cosines(*scored_pair_columns(columns, labels, "Pearson plus"))
        second = mse_term(cos, gold, self.max_gold) if self.extra == "mse" else cosent_term(cos, gold)
        return 1.0 - pearson_r(cos, gold) + self.weight * second

    def get_config_dict(self) -> dict[str, Any]:
        """Its settings, as sentence-transformers' model card prints them."""
        return {"extra": self.extra, "weight": self.weight, "max_gold": self.max_gold}
