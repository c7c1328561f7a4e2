"""Build a stage's loss from its config: pcctune's own and sentence-transformers' STS losses."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import losses as st_losses
from torch import nn

from pcctune.losses.dpo import EmbeddingDPOLoss
from pcctune.losses.infonce import InfoNCELoss
from pcctune.losses.pearson import PearsonLoss
from pcctune.losses.regression import RegressionLoss

REGRESSION = ("l1", "mse", "translated_relu", "smooth_k2")
# Losses whose training data are scored pairs (sentence1, sentence2, score).
SCORED = ("pearson", "cosent", "angle", "cosine_mse", "ce", *REGRESSION)


def build_loss(stage, model: SentenceTransformer, mini_batch_size: int | None, num_classes: int | None = None) -> nn.Module:
    """The loss module named by ``stage.loss`` (a :class:`~pcctune.training.config.StageConfig`)."""
    name = stage.loss
    if name == "pearson":
        return PearsonLoss(model, mini_batch_size)
    if name in ("infonce", "contrastive"):
        return InfoNCELoss(model, stage.temperature, mini_batch_size)
    if name in REGRESSION:
        reg = stage.regression
        return RegressionLoss(model, model.get_embedding_dimension(), name, reg.k, reg.x0, reg.concat,
                              tuple(reg.label_range) if reg.label_range else None, mini_batch_size)
    if name == "dpo":
        return EmbeddingDPOLoss(model, stage.dpo.beta, mini_batch_size=mini_batch_size)
    if name == "cosent":
        return st_losses.CoSENTLoss(model)
    if name == "angle":
        return st_losses.AnglELoss(model)
    if name == "cosine_mse":
        return st_losses.CosineSimilarityLoss(model)
    if name == "ce":
        return st_losses.SoftmaxLoss(model, model.get_embedding_dimension(), num_labels=num_classes or 6)
    raise ValueError(f"unknown loss {name!r}")
