"""Losses as sentence-transformers loss modules: ``forward(sentence_features, labels) -> Tensor``."""

from pcctune.losses.infonce import InfoNCELoss
from pcctune.losses.pearson import PearsonLoss

__all__ = ["InfoNCELoss", "PearsonLoss"]
