"""InfoNCE with hard negatives (Pcc-tuning §2.3 eq. 7; SimCSE; PromptEOL stage 1).

For anchor i with positive i⁺ and hard negative i⁻, over the global batch of N triplets:

    ℓ_i = −log  e^{cos(h_i, h_i⁺)/τ} / Σ_j ( e^{cos(h_i, h_j⁺)/τ} + e^{cos(h_i, h_j⁻)/τ} )

Candidates (all positives, then all negatives) are gathered from every process with
gradients; anchor i of rank r has its positive at column r·B + i, whatever the number of hard
negatives, since the positives of all ranks come first. Pairs without negatives use the
positives alone (in-batch negatives: the stage-2 contrastive baseline of §4.3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from typing_extensions import override

from pcctune.distributed import gather, get_rank
from pcctune.losses import citations
from pcctune.losses.base import EmbeddingLoss, at_least_fp32, check_setting

TEMPERATURE = 0.05
"""τ of InfoNCE (Pcc-tuning eq. 7, SimCSE's 0.05: logits × 20)."""


def info_nce(anchors: Tensor, positives: Tensor, negatives: Tensor | None, temperature: float) -> Tensor:
    """Mean eq.-7 loss of this process's anchors against every process's candidates."""
    a = F.normalize(at_least_fp32(anchors), dim=-1)
    candidates = [gather(F.normalize(at_least_fp32(positives), dim=-1), with_grad=True)]
    if negatives is not None:
        candidates.append(gather(F.normalize(at_least_fp32(negatives), dim=-1), with_grad=True))
    logits = a @ torch.cat(candidates).T / temperature
    labels = torch.arange(a.shape[0], device=a.device) + get_rank() * a.shape[0]
    return F.cross_entropy(logits, labels)


class InfoNCELoss(EmbeddingLoss):
    """Contrastive loss of eq. 7 with hard negatives, gathered across processes.

    Args:
        model: the SentenceTransformer being trained.
        temperature: τ (0.05, SimCSE's; neither the PromptEOL nor the Pcc-tuning paper states one).
        mini_batch_size: GradCache mini-batch size, or ``None`` to embed the batch at once.

    Inputs: (anchor, positive, negative) triplets or (anchor, positive) pairs; no label.

    Examples:
        ```python
        loss = InfoNCELoss(model, temperature=0.05, mini_batch_size=16)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=triplets, loss=loss, args=args)
        ```
    """

    citation = citations.SIMCSE

    def __init__(self, model: nn.Module, temperature: float = TEMPERATURE, mini_batch_size: int | None = None) -> None:
        super().__init__(model, mini_batch_size)
        check_setting(temperature > 0, "temperature", temperature, "above 0")
        self.temperature = temperature

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        if len(columns) not in (2, 3):
            raise ValueError(f"InfoNCE expects (anchor, positive[, negative]) columns, got {len(columns)}")
        return info_nce(columns[0], columns[1], columns[2] if len(columns) == 3 else None, self.temperature)

    def get_config_dict(self) -> dict:
        """Its settings, as sentence-transformers' model card prints them."""
        return {"temperature": self.temperature, "mini_batch_size": self.mini_batch_size}
