"""Regression losses train on the pooled embedding, before a model's ``Normalize`` module.

The regression paper (Zhang & Li, §3, Figure 1) feeds its linear head the mean-pooled embeddings u and v. A model
that ends in ``Normalize`` (all-MiniLM-L6-v2, all-mpnet-base-v2) gives unit vectors instead, and a head on unit
vectors must grow its weights by the norm that normalisation removed before it can span the 0–5 labels. At the
encoder's learning rate it cannot, and the encoder bends to the head instead: all-MiniLM-L6-v2's dev Spearman fell
from 0.87 to 0.20 within 50 steps of Smooth K2 with the normalised embeddings, and rose to 0.873 in 60 steps with
the pooled ones (reproductions/regression). Cosine similarity, which every dev and test score uses, does not depend
on the norm; the saved model keeps its ``Normalize`` module and encodes unit vectors as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules.normalize import Normalize


def _pass_through(features: dict[str, Any]) -> dict[str, Any]:
    return features


@contextmanager
def pooled_embeddings(model: SentenceTransformer, active: bool = True) -> Iterator[None]:
    """Inside the block (when ``active``), ``model``'s ``Normalize`` modules pass the pooled embedding through."""
    normalizers = [module for module in model if isinstance(module, Normalize)] if active else []
    for module in normalizers:
        module.forward = _pass_through  # type: ignore[method-assign]  # the module, its config and saves unchanged
    try:
        yield
    finally:
        for module in normalizers:
            del module.forward
