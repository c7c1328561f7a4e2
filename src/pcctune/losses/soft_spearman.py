"""Differentiable Spearman: 1 − Pearson(soft ranks of the cosines, ranks of the gold scores).

Spearman's ρ is the evaluation metric, but ranks are piecewise constant in the scores, so their
gradient is zero almost everywhere. Blondel et al. (2020, "Fast Differentiable Sorting and
Ranking", ICML) replace the rank vector by its projection onto the permutahedron, with a
quadratic regulariser of strength ε:

    r_ε(θ) = argmin_{μ ∈ P(ρ)} ½‖μ − θ/ε‖²,   ρ = (1, 2, …, n),

which tends to the hard ranks (ties averaged, 1 for the smallest) as ε → 0 and to the constant
(n + 1)/2 as ε → ∞. The projection reduces to an isotonic regression (their Prop. 3): with z = θ/ε
sorted in decreasing order as s and w = (n, n−1, …, 1),

    v = argmin_{v₁ ≥ v₂ ≥ … ≥ vₙ} ½‖v − (s − w)‖²,   r_ε(θ)_σ = s − v,

solved exactly by pool-adjacent-violators in O(n log n) (the sort), and whose Jacobian is
I − B, B averaging within each pooled block. The loss over the global batch is

    ℓ = 1 − r( r_ε(cos(u, v)), rank(gold) )

with r Pearson's correlation (eq. 8 of Pcc-tuning, on ranks instead of values): the stage-2
objective that optimises the evaluation metric itself.

**ε is scaled to the batch.** Applied to raw cosines, a fixed ε = 0.1 collapses: the cosines of a
batch of 64 span about 0.5, so neighbouring gaps of θ/ε are far below the unit steps of ρ, PAV pools
the whole batch into one block, r_ε is an affine function of the cosines and the loss is exactly
1 − Pearson(cos, rank(gold)) (measured: equal to 1e-16; docs/fidelity.md). ``SoftSpearmanLoss``
therefore ranks z = n · standardise(cos) / ε (mean and spread taken as constants), so ε counts in
units of the batch: ε = 1 stays within 0.002 of Spearman's ρ while pooling leaves about 0.73 n blocks in a
batch of n, the pooled ones the only ones through which a gradient flows (ε → 0: hard ranks, no gradient;
ε ≥ 5: one block, Pearson again). No maintained PyPI implementation
installs here (torchsort needs a CUDA toolchain to build), hence these few lines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from scipy.stats import rankdata
from torch import Tensor, nn
from typing_extensions import override

from pcctune.losses import citations
from pcctune.losses.base import EmbeddingLoss, check_setting
from pcctune.losses.pearson import global_scored_cosines, pearson_r, scored_pair_columns

REGULARIZATION = 1.0
"""ε of the soft ranks (Blondel et al. 2020), in units of the batch (``batch_scaled``)."""


def isotonic_decreasing(y: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The non-increasing least-squares fit of ``y`` (pool adjacent violators) and its pooled blocks."""
    sums: list[float] = []
    counts: list[int] = []
    for value in y:
        sums.append(float(value))
        counts.append(1)
        while len(sums) > 1 and sums[-2] / counts[-2] < sums[-1] / counts[-1]:
            total, count = sums.pop(), counts.pop()
            sums[-1] += total
            counts[-1] += count
    fit = np.repeat([s / c for s, c in zip(sums, counts, strict=True)], counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
    return fit, [(start, start + count) for start, count in zip(starts, counts, strict=True)]


class _SoftRank(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, z: Tensor) -> Tensor:
        n = z.shape[0]
        order = torch.argsort(z, descending=True)
        s = z[order]
        w = torch.arange(n, 0, -1, dtype=z.dtype, device=z.device)
        fit, blocks = isotonic_decreasing((s - w).detach().cpu().double().numpy())
        ranks = torch.empty_like(z)
        ranks[order] = s - torch.as_tensor(fit, dtype=z.dtype, device=z.device)
        ctx.save_for_backward(order)
        ctx.blocks = blocks
        return ranks

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Tensor:
        (order,) = ctx.saved_tensors
        g = grad_output[order]
        averaged = g.clone()
        for start, end in ctx.blocks:
            averaged[start:end] = g[start:end].mean()
        grad = torch.empty_like(grad_output)
        grad[order] = g - averaged  # (I − B)ᵀ g, B symmetric block averaging
        return grad


def soft_rank(values: Tensor, regularization: float = 1.0) -> Tensor:
    """Soft ranks r_ε of a 1-D tensor (1 for the smallest as ε → 0), differentiable."""
    return _SoftRank.apply(values / regularization)


def batch_scaled(values: Tensor, regularization: float) -> Tensor:
    """``n · (values − mean) / std / ε``: the soft-rank input whose ε does not depend on the spread of the batch."""
    spread = values.detach().std().clamp_min(torch.finfo(values.dtype).eps)
    return (values - values.detach().mean()) / spread * (values.numel() / regularization)


def hard_rank(values: Tensor) -> Tensor:
    """Ranks with ties averaged (scipy's ``rankdata``), 1 for the smallest; no gradient."""
    return torch.as_tensor(rankdata(values.detach().cpu().numpy()), dtype=values.dtype, device=values.device)


class SoftSpearmanLoss(EmbeddingLoss):
    """1 − Pearson(soft ranks of cos(u, v), ranks of gold) over the global batch (GradCache-compatible).

    Args:
        model: the SentenceTransformer being trained.
        regularization: ε of the soft ranks, in units of the batch (``batch_scaled``); smaller is closer to
            Spearman (and to zero gradients), 5 and above is Pearson of the cosines.
        mini_batch_size: GradCache mini-batch size, or ``None``.

    Inputs: (sentence1, sentence2) pairs with a float score label.

    Examples:
        ```python
        loss = SoftSpearmanLoss(model, regularization=1.0, mini_batch_size=32)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=pairs, loss=loss, args=args)
        ```
    """

    citation = citations.SOFT_RANKS

    def __init__(
        self, model: nn.Module, regularization: float = REGULARIZATION, mini_batch_size: int | None = None
    ) -> None:
        super().__init__(model, mini_batch_size)
        check_setting(regularization > 0, "regularization", regularization, "above 0")
        self.regularization = regularization

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        cos_all, gold_all = global_scored_cosines(*scored_pair_columns(columns, labels, "soft Spearman"))
        return 1.0 - pearson_r(soft_rank(batch_scaled(cos_all, self.regularization)), hard_rank(gold_all))

    def get_config_dict(self) -> dict[str, Any]:
        """Its settings, as sentence-transformers' model card prints them."""
        return {"regularization": self.regularization, "mini_batch_size": self.mini_batch_size}
