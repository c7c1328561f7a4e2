"""A saved sentence-transformers model rebuilt with another pooling or template keeps what it saved beyond its input
module and pooling: the modules after its pooling (a ``Dense`` projection, ``Normalize``) and its prompts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

from pcctune.modeling.build import build_model

PROMPTS = {"query": "query: ", "document": ""}
TEXTS = ["a man is playing a guitar", "two dogs run in the park"]


@pytest.fixture(scope="module")
def projected_bert(tiny_bert, tmp_path_factory) -> Path:
    """The tiny encoder saved with mean pooling, a 5-wide ``Dense`` projection, ``Normalize``, and a default prompt."""
    torch.manual_seed(0)
    backbone = Transformer(str(tiny_bert))
    width = backbone.get_embedding_dimension()
    modules = [backbone, Pooling(width, "mean"), Dense(width, 5), Normalize()]
    model = SentenceTransformer(modules=modules, prompts=PROMPTS, default_prompt_name="query")
    model.similarity_fn_name = "dot"
    folder = tmp_path_factory.mktemp("projected") / "model"
    model.save(str(folder))
    return folder


def test_another_pooling_keeps_the_saved_projection_normalization_and_prompts(projected_bert):
    saved = SentenceTransformer(str(projected_bert))
    rebuilt = build_model(str(projected_bert), pooling="cls")
    assert [type(module).__name__ for module in rebuilt] == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert rebuilt[1].pooling_mode == "cls"
    torch.testing.assert_close(rebuilt[2].linear.weight, saved[2].linear.weight)
    assert (rebuilt.prompts["query"], rebuilt.default_prompt_name) == ("query: ", "query")
    assert rebuilt.similarity_fn_name == "dot"
    vectors = rebuilt.encode(TEXTS, convert_to_numpy=True)
    assert vectors.shape == (2, 5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_template_keeps_them_too_and_the_prompt_is_applied(projected_bert):
    rebuilt = build_model(str(projected_bert), template="This sentence : {text} means in one word:")
    assert [type(module).__name__ for module in rebuilt][2:] == ["Dense", "Normalize"]
    with_prompt = rebuilt.encode(TEXTS, convert_to_numpy=True)
    bare = rebuilt.encode(TEXTS, prompt="", convert_to_numpy=True)
    assert np.abs(with_prompt - bare).max() > 1e-4  # the saved default prompt is in force


def test_a_plain_folder_rebuilt_has_nothing_added(tiny_bert):
    model = build_model(str(tiny_bert), pooling="cls")
    assert [type(module).__name__ for module in model] == ["Transformer", "Pooling"]
