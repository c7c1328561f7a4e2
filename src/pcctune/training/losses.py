"""A stage's loss module, built from its config and the loss registry."""

from __future__ import annotations

from typing import Any

from sentence_transformers import SentenceTransformer
from torch import nn

from pcctune.losses.base import EmbeddingLoss
from pcctune.losses.cached_pairs import with_gradient_cache
from pcctune.losses.dpo import EmbeddingDPOLoss
from pcctune.losses.infonce import InfoNCELoss
from pcctune.losses.length_chunks import LengthChunker
from pcctune.losses.mlm import AuxiliaryMLMLoss, load_mlm_head
from pcctune.losses.pearson import PearsonLoss
from pcctune.losses.pearson_by_source import SourcePearsonLoss
from pcctune.losses.pearson_plus import PearsonPlusLoss
from pcctune.losses.registry import loss_spec
from pcctune.losses.regression import RegressionLoss
from pcctune.losses.soft_spearman import SoftSpearmanLoss
from pcctune.modeling.template import input_module
from pcctune.training.config import StageConfig


def build_loss(
    stage: StageConfig, model: SentenceTransformer, mini_batch_size: int | None, top_score: float | None = None
) -> nn.Module:
    """The loss named by ``stage.loss``, embedding in length chunks as ``stage.length_chunks`` says, wrapped with
    DCPCSE's auxiliary MLM term when enabled; ``top_score``: the training set's largest score (a classifier's classes
    are it + 1, ``pearson_mse``'s MSE term divides the gold by it)."""
    loss = _main_loss(stage, model, mini_batch_size, top_score)
    if isinstance(loss, EmbeddingLoss):
        loss.length_chunks = LengthChunker(stage.length_chunks)
    if not stage.mlm.enabled:
        return loss
    mlm = stage.mlm
    backbone: Any = input_module(model).model
    base = backbone.get_base_model() if hasattr(backbone, "get_base_model") else backbone
    head = load_mlm_head(base.config._name_or_path, mlm.train_head)
    return AuxiliaryMLMLoss(
        loss, model, head, mlm.initial_weight, mlm.decay_rate, mlm.decay_steps, mlm.mask_probability
    )


def _main_loss(
    stage: StageConfig, model: SentenceTransformer, mini_batch_size: int | None, top_score: float | None
) -> nn.Module:
    spec = loss_spec(stage.loss)
    cls = spec.cls
    if cls is PearsonLoss:
        return PearsonLoss(model, mini_batch_size)
    if cls is SourcePearsonLoss:
        return SourcePearsonLoss(model, mini_batch_size)
    if cls is PearsonPlusLoss:
        return PearsonPlusLoss(
            model,
            "mse" if spec.variant == "mse" else "cosent",
            stage.loss_weight,
            max_gold=top_score or 5.0,  # the gold ÷ the set's largest score, as cosine-MSE's labels (``unit``)
            mini_batch_size=mini_batch_size,
        )
    if cls is SoftSpearmanLoss:
        return SoftSpearmanLoss(model, stage.soft_rank_regularization, mini_batch_size)
    if cls is InfoNCELoss:
        return InfoNCELoss(model, stage.temperature, mini_batch_size)
    if cls is RegressionLoss:
        reg = stage.regression
        label_range = (reg.label_range[0], reg.label_range[1]) if reg.label_range else None
        return RegressionLoss(
            model,
            model.get_embedding_dimension() or 0,
            str(spec.variant),  # the penalty the name selects
            reg.k,
            reg.x0,
            reg.concat,
            label_range,
            mini_batch_size,
        )
    if cls is EmbeddingDPOLoss:
        return EmbeddingDPOLoss(model, stage.dpo.beta, mini_batch_size=mini_batch_size)
    if spec.labels == "class":  # a classifier over the rounded scores
        return cls(model, model.get_embedding_dimension(), num_labels=int(top_score) + 1 if top_score else 6)
    return with_gradient_cache(cls(model), mini_batch_size)  # sentence-transformers' scored-pair losses
