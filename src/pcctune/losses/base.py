"""What every pcctune embedding loss shares: plain or GradCache forward over the global batch."""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from sentence_transformers.base.losses.gradcache import CachedLossMixin
from torch import Tensor, nn
from typing_extensions import override

from pcctune.distributed import gather
from pcctune.losses.length_chunks import LengthChunker, Padding


def at_least_fp32(tensor: Tensor) -> Tensor:
    """Upcast half-precision tensors to fp32 for accumulation; keep fp32/fp64 as they are."""
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


def check_setting(valid: bool, what: str, value: object, expected: str) -> None:
    """Refuse a loss setting when it is built, not at its first forward: ``what`` must be ``expected``."""
    if not valid:
        raise ValueError(f"{what} must be {expected}; got {value!r}")


def global_pair_cosines(u: Tensor, v: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """cos(u, v) of this process's pairs and their labels, gathered over every process: the cosines with their
    gradients (``torch.distributed.nn``), the labels without; the Pearson group is the global batch
    (Pcc-tuning eq. 8), whatever the number of GPUs. Single-process: the tensors themselves."""
    cos = F.cosine_similarity(at_least_fp32(u), at_least_fp32(v), dim=-1)
    return gather(cos, with_grad=True), gather(labels.to(cos.device, cos.dtype), with_grad=False)


def loss_owned_parameters(loss: nn.Module, model: nn.Module) -> list[nn.Parameter]:
    """The trainable parameters of ``loss`` itself (a regression head, an MLM head), not of the ``model`` it trains."""
    owned_by_model = {id(p) for p in model.parameters()}
    return [p for p in loss.parameters() if p.requires_grad and id(p) not in owned_by_model]


class EmbeddingLoss(CachedLossMixin, nn.Module):
    """A loss computed from the embeddings of every input column (and the labels).

    With ``mini_batch_size`` set, columns are embedded in mini-batches without gradients and
    the gradients are cached (sentence-transformers' GradCache machinery), so memory stays that
    of one mini-batch however large the batch; otherwise the batch is embedded at once, in chunks of similar
    token length where ``length_chunks`` allows (``length_chunks``; a stage's
    ``length_chunks`` sets it). Subclasses implement ``loss_from_embeddings``.
    """

    def __init__(self, model: nn.Module, mini_batch_size: int | None = None) -> None:
        super().__init__()
        check_setting(
            mini_batch_size is None or mini_batch_size >= 1,
            "mini_batch_size",
            mini_batch_size,
            "at least 1 (None: no gradient cache)",
        )
        self.model = model
        self.mini_batch_size = mini_batch_size  # type: ignore[assignment]  # None: no GradCache
        self.uses_gradient_cache = mini_batch_size is not None
        self.length_chunks = LengthChunker()
        self._own_gradients: list[tuple[nn.Parameter, Tensor | None]] = []  # GradCache's step 2, for the hook

    def _embed(self, features: dict[str, Tensor]) -> Tensor:
        return self.model(features)["sentence_embedding"]

    def _padding(self) -> Padding:
        """How the model's tokenizer pads (through a DDP or ``torch.compile`` wrapper the trainer put around it)."""
        model: Any = self.model
        while not hasattr(model, "tokenizer"):
            inner = getattr(model, "module", None)
            model = inner if inner is not None else getattr(model, "_orig_mod", None)
            if model is None:
                return Padding()
        return Padding.of(model.tokenizer)

    @abstractmethod
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss given one embedding matrix per input column."""

    @override
    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        if self.mini_batch_size is None:
            columns = self.length_chunks(self._embed, list(sentence_features), self._padding())
            return self.loss_from_embeddings(columns, labels)
        if self.length_chunks.mode == "on":
            self.length_chunks.say(logging.WARNING, "length chunks off: GradCache embeds the batch in mini-batches")
        return self.forward_cached(sentence_features, labels)

    def calculate_loss(
        self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
    ) -> Tensor:
        """The loss over the batch; with ``with_backward`` (GradCache's step 2), its gradient with respect to the
        embeddings set on them (the cache) and that of the loss's own parameters kept for ``forward_cached``."""
        loss = self.loss_from_embeddings([torch.cat(column) for column in reps], labels)
        if with_backward:
            embeddings, own = [rep for column in reps for rep in column], loss_owned_parameters(self, self.model)
            gradients = torch.autograd.grad(loss, [*embeddings, *own], allow_unused=True)
            for rep, gradient in zip(embeddings, gradients, strict=False):
                rep.grad = gradient
            self._own_gradients = list(zip(own, gradients[len(embeddings) :], strict=True))
            loss = loss.detach()
        return loss

    def forward_cached(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        """sentence-transformers' GradCache forward, the loss's own parameters included: their gradient reaches them
        scaled by whatever the outer backward hands the loss (gradient accumulation's division, fp16's scaler), as
        the replay scales the encoder's; a plain ``backward`` at step 2 would give them the unscaled one."""
        self._own_gradients = []
        loss = super().forward_cached(sentence_features, labels)
        own, self._own_gradients = self._own_gradients, []
        if own and loss.requires_grad:
            loss.register_hook(partial(_add_scaled, own))
        return loss


def _add_scaled(gradients: list[tuple[nn.Parameter, Tensor | None]], grad_output: Tensor) -> None:
    """Add each cached gradient, times the outer backward's ``grad_output``, to its parameter's ``.grad``."""
    for parameter, gradient in gradients:
        if gradient is not None:
            scaled = gradient * grad_output.to(gradient.dtype)
            parameter.grad = scaled if parameter.grad is None else parameter.grad + scaled
