"""sentence-transformers' scored-pair losses under GradCache: the same loss and gradients, one mini-batch's memory.

CoSENT (Su 2022), AnglE (Li & Li 2024, eq. 6) and cosine-MSE (``CosineSimilarityLoss``) embed a whole batch with
gradients in sentence-transformers, and compute their loss from the embeddings with ``compute_loss_from_embeddings``.
``CachedPairLoss`` hands those embeddings over from pcctune's ``pcctune.losses.base.EmbeddingLoss``, so a
stage's ``mini_batch_size`` embeds them GradCache-style (Gao et al. 2021: the batch embedded in mini-batches without
gradients, the loss's gradient with respect to the embeddings cached, then each mini-batch embedded again with
gradients), as it embeds pcctune's own losses: the loss over the whole batch is the same, its gradients the same up
to float rounding, the memory that of one mini-batch, at the cost of one more forward pass. On a decoder this is what
lets the three losses train at the same batch on a CPU: SmolLM2-135M with QLoRA embedding 64 pairs at once with
gradients outgrew a 24 GB machine (``benchmarks/results/speed``).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from torch import Tensor, nn
from typing_extensions import override

from pcctune.losses.base import EmbeddingLoss


class FromEmbeddings(Protocol):
    """What ``CachedPairLoss`` calls on the loss it wraps (sentence-transformers' ``CoSENTLoss``, ``AnglELoss``,
    ``CosineSimilarityLoss``)."""

    model: nn.Module

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        """The loss from the columns' embeddings and the labels."""

    def get_config_dict(self) -> dict[str, Any]:
        """The loss's settings, for the model card."""


class CachedPairLoss(EmbeddingLoss):
    """A sentence-transformers loss that computes from embeddings (``compute_loss_from_embeddings``), embedded by
    pcctune's plain or GradCache forward (``mini_batch_size``)."""

    def __init__(self, loss: nn.Module, mini_batch_size: int | None) -> None:
        super().__init__(cast(FromEmbeddings, loss).model, mini_batch_size)
        self.loss = loss

    def wrapped(self) -> FromEmbeddings:
        """The sentence-transformers loss this one computes, as the ``FromEmbeddings`` it is called as."""
        return cast(FromEmbeddings, self.loss)

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        if labels is None:
            raise ValueError(f"{type(self.loss).__name__} needs a score for every pair")
        return self.wrapped().compute_loss_from_embeddings(columns, labels)

    def get_config_dict(self) -> dict[str, Any]:
        """The wrapped loss's name and settings and the GradCache mini-batch size, for the model card."""
        return {
            "loss": type(self.loss).__name__,
            **self.wrapped().get_config_dict(),
            "mini_batch_size": self.mini_batch_size,
        }


def with_gradient_cache(loss: nn.Module, mini_batch_size: int | None) -> nn.Module:
    """``loss`` embedded in GradCache mini-batches of ``mini_batch_size`` where it can compute from embeddings; as it
    is without a mini-batch size, or where it cannot."""
    if mini_batch_size is None or not hasattr(loss, "compute_loss_from_embeddings"):
        return loss
    return CachedPairLoss(loss, mini_batch_size)
