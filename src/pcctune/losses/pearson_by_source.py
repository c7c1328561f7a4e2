"""Pearson within each source of a group: ℓ = 1 − Σ_s (n_s / n) · r_s.

Pcc-tuning's stage-2 group mixes STS-B pairs (scored 0–5, STS annotators) and SICK pairs
(relatedness 1–5, other annotators). Pearson's r is a within-group statistic: over a mixed
group it rewards getting the offset *between* the two sources right, which the evaluation never
asks for (each test set is correlated on its own). Here r_s is eq. 8's correlation over the pairs
of source s alone, and the loss is one minus their mean weighted by pair count n_s. A source with
fewer than two pairs, or constant gold scores, in a group has no correlation and is left out.

Labels are (score, source id) per pair; ``group_by_source`` batches (one source per group)
are the other remedy, with the plain Pearson loss.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from typing_extensions import override

from pcctune.losses import citations
from pcctune.losses.base import EmbeddingLoss, global_pair_cosines
from pcctune.losses.pearson import EPS, check_gold, pearson_r


def source_pearson_loss(cos: Tensor, gold: Tensor, sources: Tensor, eps: float = EPS) -> Tensor:
    """1 − Σ_s (n_s / n) r_s over the sources with a defined correlation; 1 when none has one."""
    terms, weights = [], []
    for source in torch.unique(sources):
        mask = sources == source
        if int(mask.sum()) < 2 or bool(torch.all(gold[mask] == gold[mask][0])):
            continue
        terms.append(pearson_r(cos[mask], gold[mask], eps))
        weights.append(mask.sum().to(cos.dtype))
    if not terms:
        return cos.sum() * 0 + 1.0
    weight = torch.stack(weights)
    return 1.0 - (torch.stack(terms) * weight).sum() / weight.sum()


class SourcePearsonLoss(EmbeddingLoss):
    """Pearson loss (Pcc-tuning eq. 8) computed within each source of the global batch, weighted by pair count.

    Args:
        model: the SentenceTransformer being trained.
        mini_batch_size: GradCache mini-batch size, or ``None`` to embed the batch at once.
        eps: added under each square root of a correlation's denominator.

    Inputs: (sentence1, sentence2) pairs with a two-number label per pair: the score and its source id (``0``
    STS-B or a user's file, ``1`` SICK).

    Examples:
        ```python
        pairs = pairs.map(lambda row: {"score": [row["score"], row["source"]]}, remove_columns=["source"])
        trainer = SentenceTransformerTrainer(model=model, train_dataset=pairs, loss=SourcePearsonLoss(model), args=args)
        ```
    """

    citation = citations.PCC_TUNING

    def __init__(self, model: nn.Module, mini_batch_size: int | None = None, eps: float = EPS) -> None:
        super().__init__(model, mini_batch_size)
        self.eps = eps

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        if len(columns) != 2 or labels is None or labels.ndim != 2:
            raise ValueError("per-source Pearson expects (sentence1, sentence2) columns and (score, source) labels")
        cos_all, labels_all = global_pair_cosines(columns[0], columns[1], labels)
        check_gold(labels_all[:, 0])
        return source_pearson_loss(cos_all, labels_all[:, 0], labels_all[:, 1], self.eps)

    def get_config_dict(self) -> dict[str, Any]:
        """Its settings, as sentence-transformers' model card prints them."""
        return {"mini_batch_size": self.mini_batch_size, "eps": self.eps}
