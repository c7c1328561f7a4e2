"""SimCSE's MLP pooler (Gao et al. 2021, §6.3; DCPCSE's ``--pooler_type cls``): a dense layer with tanh over the
pooled [CLS] vector, trained with the rest and kept at evaluation (the supervised setting of both papers).

It is sentence-transformers' own ``Dense`` module appended after the pooling, so a saved model still loads in
plain sentence-transformers. It stays trainable when continuous prompts freeze the backbone, as in DCPCSE, whose
models freeze only the encoder's parameters.
"""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense
from torch import nn

from pcctune.errors import PcctuneError


def add_mlp_head(model: SentenceTransformer) -> SentenceTransformer:
    """Append a dim → dim dense layer with tanh to ``model`` (the MLP of SimCSE's pooler); returns the model."""
    dim = model.get_embedding_dimension()
    if dim is None:
        raise PcctuneError("the model does not say its embedding size; the MLP head needs it")
    model.append(Dense(dim, dim, activation_function=nn.Tanh()))
    return model
