"""A saved sentence-transformers model rebuilt with another pooling or template keeps what it saved beyond its input
module and pooling: the modules after its pooling (a ``Dense`` projection, ``Normalize``), its pooling's
``include_prompt`` and its prompts; SimCSE's MLP head goes right after the pooling, before them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

from pcctune.errors import PcctuneError
from pcctune.modeling.build import build_model
from pcctune.modeling.pooler_head import add_mlp_head
from pcctune.modeling.saved_parts import saved_pooling_mode
from pcctune.modeling.saving import MODULES_FILE, saved_modules
from tests.conftest import hub_cache

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


def test_the_mlp_head_reads_the_pooled_vector_before_the_saved_modules(projected_bert):
    model = add_mlp_head(build_model(str(projected_bert), pooling="cls"))
    assert [type(module).__name__ for module in model] == ["Transformer", "Pooling", "Dense", "Dense", "Normalize"]
    assert model[2].linear.in_features == model[2].linear.out_features == model[1].get_embedding_dimension()


def _saved(tiny_bert, folder: Path, pooling: Pooling, *tail) -> Path:
    backbone = Transformer(str(tiny_bert))
    SentenceTransformer(modules=[backbone, pooling, *tail]).save(str(folder))
    return folder


def test_the_saved_poolings_include_prompt_is_kept(tiny_bert, tmp_path):
    width = Transformer(str(tiny_bert)).get_embedding_dimension()
    folder = _saved(tiny_bert, tmp_path / "model", Pooling(width, "mean", include_prompt=False), Normalize())
    assert build_model(str(folder), pooling="cls")[1].include_prompt is False


def test_a_saved_dense_layer_the_new_pooling_does_not_fit_is_refused_in_one_line(tiny_bert, tmp_path):
    width = Transformer(str(tiny_bert)).get_embedding_dimension()
    folder = _saved(tiny_bert, tmp_path / "model", Pooling(width, ("mean", "max")), Dense(2 * width, 5))
    with pytest.raises(PcctuneError) as error:
        build_model(str(folder), pooling="cls")
    message = str(error.value)
    assert "\n" not in message
    assert f"takes {2 * width}-wide vectors" in message


def test_a_saved_module_from_outside_sentence_transformers_is_not_imported_untrusted(projected_bert, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(projected_bert, folder)
    modules = saved_modules(folder)
    modules[-1]["type"] = "json.JSONDecoder"  # importable, but no code of sentence-transformers or pcctune
    (folder / MODULES_FILE).write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(PcctuneError) as error:
        build_model(str(folder), pooling="cls")
    message = str(error.value)
    assert "\n" not in message
    assert "'json.JSONDecoder', which is not part of Sentence Transformers" in message


def test_a_hub_model_rebuilt_with_a_template_keeps_its_saved_pooling_mode(tiny_bert, tmp_path, monkeypatch):
    """A Hub id's saved pooling is read from the cache its load reads, as a folder's is: rebuilt with a template, a
    model saved with CLS pooling still pools its CLS token (not the default mean)."""
    from huggingface_hub import constants

    backbone = Transformer(str(tiny_bert))
    saved = tmp_path / "cls-model"
    SentenceTransformer(modules=[backbone, Pooling(backbone.get_embedding_dimension(), "cls")]).save(str(saved))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache(tmp_path / "hf", "org/cls-model", saved, "c" * 40)))
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    assert saved_pooling_mode("org/cls-model") == saved_pooling_mode(str(saved)) == "cls"
    assert saved_pooling_mode("org/not-cached") is None and saved_pooling_mode(str(tiny_bert)) is None
    for source in ("org/cls-model", str(saved)):
        rebuilt = build_model(source, template="This sentence : {text} means in one word:")
        assert next(module for module in rebuilt if isinstance(module, Pooling)).pooling_mode == "cls"
