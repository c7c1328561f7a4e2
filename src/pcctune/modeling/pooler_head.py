"""SimCSE's MLP pooler (Gao et al. 2021, §6.3; DCPCSE's ``--pooler_type cls``): a dense layer with tanh over the
pooled [CLS] vector, trained with the rest and kept at evaluation (the supervised setting of both papers).

It is sentence-transformers' own ``Dense`` module put right after the pooling (before any module a saved model
keeps after it, such as ``Normalize``: the MLP reads the pooled vector itself), so a saved model still loads in
plain sentence-transformers. It stays trainable when continuous prompts freeze the backbone, as in DCPCSE, whose
models freeze only the encoder's parameters.
"""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Pooling
from torch import nn

from pcctune.errors import PcctuneError


def add_mlp_head(model: SentenceTransformer) -> SentenceTransformer:
    """Put a dim → dim dense layer with tanh right after ``model``'s pooling (the MLP of SimCSE's pooler, dim the
    pooled width); returns the model."""
    found = next(((i, module) for i, module in enumerate(model) if isinstance(module, Pooling)), None)
    if found is None:
        raise PcctuneError("the model has no pooling module: the MLP head goes right after it")
    at, pooling = found
    dim = pooling.get_embedding_dimension()
    model.insert(at + 1, Dense(dim, dim, activation_function=nn.Tanh()))
    return model
