"""DPO alignment of sentence embeddings with a preference model (PromptEOL §3.3, eq. 1).

A cross-encoder ranks two sentence pairs, (x₁, x₂) ≻ (x₃, x₄). The embedding model π_θ starts
from a reference π_ref (the stage-1 or stage-2 model, frozen) and is trained with

    ℓ = −log σ( β[log s_θ(x₁,x₂) − log s_ref(x₁,x₂)] − β[log s_θ(x₃,x₄) − log s_ref(x₃,x₄)] )

The paper writes log σ(β·rejected − β·preferred), the same direction of optimisation; we use
the standard DPO form above. Similarities enter a logarithm, so the cosine is mapped to a
positive range: s = (1 + cos)/2 ∈ [0, 1], clamped below at ``min_similarity``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from typing_extensions import override

from pcctune.losses import citations
from pcctune.losses.base import EmbeddingLoss, at_least_fp32


def positive_similarity(a: Tensor, b: Tensor, min_similarity: float = 1e-4) -> Tensor:
    """(1 + cos(a, b)) / 2, clamped to at least ``min_similarity`` so that its log is finite."""
    cos = F.cosine_similarity(at_least_fp32(a), at_least_fp32(b), dim=-1)
    return ((1 + cos) / 2).clamp(min=min_similarity)


BETA = 0.1
"""DPO's β (PromptEOL §3.3, DPO's usual 0.1): how far the trained policy may move from the reference."""


def dpo_loss(policy: tuple[Tensor, Tensor], reference: tuple[Tensor, Tensor], beta: float) -> Tensor:
    """Mean DPO loss from (preferred, rejected) similarities of the policy and of the reference."""
    preferred = torch.log(policy[0]) - torch.log(reference[0])
    rejected = torch.log(policy[1]) - torch.log(reference[1])
    return -F.logsigmoid(beta * (preferred - rejected)).mean()


class EmbeddingDPOLoss(EmbeddingLoss):
    """DPO on embedding similarities against a frozen copy of the starting model.

    Args:
        model: the SentenceTransformer being trained (π_θ).
        beta: DPO's β (how far π_θ may move from π_ref).
        reference: the frozen reference π_ref; default a deep copy of ``model`` taken now.
        min_similarity: the floor of s = (1 + cos)/2 before its logarithm.
        mini_batch_size: GradCache mini-batch size, or ``None`` to embed the batch at once.

    Inputs: four columns (x1, x2, x3, x4), the preference model preferring (x1, x2).

    Examples:
        ```python
        loss = EmbeddingDPOLoss(model, beta=0.1)  # π_ref: a frozen copy of the model as it is now
        trainer = SentenceTransformerTrainer(model=model, train_dataset=preferences, loss=loss, args=args)
        ```
    """

    citation = citations.PROMPTEOL

    def __init__(
        self,
        model: nn.Module,
        beta: float = BETA,
        reference: nn.Module | None = None,
        min_similarity: float = 1e-4,
        mini_batch_size: int | None = None,
    ) -> None:
        super().__init__(model, mini_batch_size)
        reference = reference if reference is not None else copy.deepcopy(model)
        reference.eval()
        for parameter in reference.parameters():
            parameter.requires_grad_(False)
        # A plain attribute, not a submodule: the reference must not reach the optimizer or checkpoints.
        self.__dict__["reference"] = reference
        self.reference: nn.Module
        self.beta = beta
        self.min_similarity = min_similarity

    @override
    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = list(sentence_features)
        device = features[0]["input_ids"].device
        if next(self.reference.parameters()).device != device:
            self.reference.to(device)
        with torch.no_grad():
            ref = [self.reference(dict(f))["sentence_embedding"] for f in features]
        self._reference = ref
        return super().forward(features, labels)

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        if len(columns) != 4:
            raise ValueError(f"DPO expects (x1, x2, x3, x4) columns, got {len(columns)}")
        ref = self._reference
        m = self.min_similarity
        policy = (positive_similarity(columns[0], columns[1], m), positive_similarity(columns[2], columns[3], m))
        reference = (positive_similarity(ref[0], ref[1], m), positive_similarity(ref[2], ref[3], m))
        return dpo_loss(policy, reference, self.beta)

    def get_config_dict(self) -> dict:
        """Its settings, as sentence-transformers' model card prints them."""
        return {"beta": self.beta, "min_similarity": self.min_similarity}
