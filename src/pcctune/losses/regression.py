"""Siamese regression with Translated ReLU and Smooth K2 (Zhang & Li, "A Regression Framework…", §3).

Sentence embeddings u, v (mean pooling) are concatenated as (u, v, |u−v|) and a linear layer
predicts one score. With x = |prediction − label| (labels stay floats):

- L1: x; MSE: x²;
- Translated ReLU (eq. 1): f(x) = max(0, k(x − x₀)), a zero-gradient zone below x₀;
- Smooth K2 (eq. 2): f(x) = k(x − x₀)² for x ≥ x₀, else 0 (gradient 2k(x − x₀)).

Paper defaults: k = 2, x₀ = 0.25 (Table 2, BERT Smooth K2). Optionally, predictions beyond the
label range are moved to its nearest boundary before x is computed (§3.3), with a
straight-through gradient so that a prediction of 7 for a label of 0 is still pulled back.
The head is a training device: evaluation uses the cosine similarity of the embeddings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

import torch
from torch import Tensor, nn
from typing_extensions import override

from pcctune.losses import citations
from pcctune.losses.base import EmbeddingLoss, at_least_fp32, check_setting

Concat = Literal["uv", "absdiff", "uv_absdiff"]
CONCAT: Concat = "uv_absdiff"
"""The head's input (regression §3.1): (u, v, |u−v|), as Sentence-BERT's classification objective."""
K = 2.0
"""The penalty's slope outside the zero-gradient zone (regression §3.2–3.3)."""
X0 = 0.25
"""The zero-gradient zone's half-width around the label (regression §3.2–3.3)."""


def translated_relu(x: Tensor, k: float, x0: float) -> Tensor:
    """Eq. 1: max(0, k(x − x₀))."""
    return torch.clamp(k * (x - x0), min=0)


def smooth_k2(x: Tensor, k: float, x0: float) -> Tensor:
    """Eq. 2: k(x − x₀)² where x ≥ x₀, 0 below."""
    return k * torch.clamp(x - x0, min=0) ** 2


PENALTIES: dict[str, Callable[[Tensor, float, float], Tensor]] = {
    "l1": lambda x, k, x0: x,
    "mse": lambda x, k, x0: x * x,
    "translated_relu": translated_relu,
    "smooth_k2": smooth_k2,
}


def penalty(name: str, x: Tensor, k: float, x0: float) -> Tensor:
    """The penalty ``name`` (a key of ``PENALTIES``) of the absolute errors ``x``."""
    if name not in PENALTIES:
        raise ValueError(f"unknown regression penalty {name!r}")
    return PENALTIES[name](x, k, x0)


def clip_straight_through(prediction: Tensor, low: float, high: float) -> Tensor:
    """The value of ``clamp(prediction, low, high)`` with the gradient of the identity."""
    return prediction + (prediction.clamp(low, high) - prediction).detach()


def pair_features(u: Tensor, v: Tensor, concat: Concat) -> Tensor:
    """(u, v), |u − v|, or (u, v, |u − v|) as in SBERT and the regression paper."""
    if concat == "uv":
        return torch.cat([u, v], dim=-1)
    if concat == "absdiff":
        return (u - v).abs()
    if concat == "uv_absdiff":
        return torch.cat([u, v, (u - v).abs()], dim=-1)
    raise ValueError(f"unknown concatenation {concat!r}")


class RegressionLoss(EmbeddingLoss):
    """A linear head on the pair features, trained with one of the regression penalties.

    Args:
        model: the SentenceTransformer being trained.
        dimension: embedding size (``model.get_embedding_dimension()``).
        penalty_name: a key of ``PENALTIES`` (``l1``, ``mse``, ``translated_relu``, ``smooth_k2``).
        k: slope of Translated ReLU / Smooth K2.
        x0: zero-gradient threshold of Translated ReLU / Smooth K2.
        concat: ``uv``, ``absdiff`` or ``uv_absdiff`` (the paper's choice).
        label_range: ``(low, high)`` to clip predictions into (straight-through), or ``None``.
        mini_batch_size: GradCache mini-batch size, or ``None`` to embed the batch at once.

    Inputs: (sentence1, sentence2) pairs with a float label (e.g. 0–5, or NLI mapped to 0/1/2).

    Examples:
        ```python
        loss = RegressionLoss(model, model.get_embedding_dimension(), "smooth_k2")
        trainer = SentenceTransformerTrainer(model=model, train_dataset=pairs, loss=loss, args=args)
        ```
    """

    citation = citations.REGRESSION

    def __init__(
        self,
        model: nn.Module,
        dimension: int,
        penalty_name: str = "smooth_k2",
        k: float = K,
        x0: float = X0,
        concat: Concat = CONCAT,
        label_range: tuple[float, float] | None = None,
        mini_batch_size: int | None = None,
    ) -> None:
        super().__init__(model, mini_batch_size)
        check_setting(concat in get_args(Concat), "concat", concat, " or ".join(get_args(Concat)))
        check_setting(penalty_name in PENALTIES, "penalty_name", penalty_name, " or ".join(PENALTIES))
        width = {"uv": 2, "absdiff": 1, "uv_absdiff": 3}[concat]
        self.head = nn.Linear(width * dimension, 1)
        self.penalty_name = penalty_name
        self.k = k
        self.x0 = x0
        self.concat = concat
        self.label_range = label_range

    def predict(self, u: Tensor, v: Tensor) -> Tensor:
        """The head's score for each pair (before any clipping)."""
        features = pair_features(at_least_fp32(u), at_least_fp32(v), self.concat)
        return self.head(features.to(self.head.weight.device, self.head.weight.dtype)).squeeze(-1)

    @override
    def loss_from_embeddings(self, columns: list[Tensor], labels: Tensor | None) -> Tensor:
        if len(columns) != 2 or labels is None:
            raise ValueError("regression expects (sentence1, sentence2) columns and a float label")
        prediction = self.predict(*columns)
        if labels.shape != prediction.shape or not torch.isfinite(labels).all():
            raise ValueError(
                f"regression expects one finite label per pair ({len(prediction)}); got {tuple(labels.shape)}"
            )
        if self.label_range is not None:
            prediction = clip_straight_through(prediction, *self.label_range)
        x = (prediction - labels.to(prediction.device, prediction.dtype)).abs()
        return penalty(self.penalty_name, x, self.k, self.x0).mean()

    def get_config_dict(self) -> dict:
        """Its settings, as sentence-transformers' model card prints them."""
        return {
            "penalty": self.penalty_name,
            "k": self.k,
            "x0": self.x0,
            "concat": self.concat,
            "label_range": self.label_range,
        }
