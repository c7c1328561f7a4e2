"""The fast encoding path: the same embeddings as sentence-transformers' encode, in input order."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pcctune.modeling.build import build_model
from pcctune.modeling.encoding import (
    DECODER_TOKEN_BUDGET,
    ENCODER_TOKEN_BUDGET,
    encode_texts,
    encode_unique,
    length_batches,
    token_lengths,
)
from tests.conftest import SENTENCES

LONG = " ".join(SENTENCES)  # longer than the tiny models' 64 positions: truncated


@pytest.mark.parametrize(("fixture", "template"), [("tiny_bert", None), ("tiny_llama", "eol"), ("tiny_bert", "sum")])
def test_fast_path_equals_sentence_transformers_encode(fixture, template, request):
    model = build_model(str(request.getfixturevalue(fixture)), template=template)
    texts = [*SENTENCES, LONG, "a", SENTENCES[3]]
    ours = encode_texts(model, texts, token_budget=64)
    theirs = model.encode(texts, batch_size=3, convert_to_numpy=True)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_batches_follow_token_length_within_the_budget():
    lengths = [5, 30, 7, 30, 12, 3, 3]
    batches = length_batches(lengths, token_budget=60)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 60
    firsts = [lengths[b[0]] for b in batches]
    assert firsts == sorted(firsts, reverse=True)


def test_token_lengths_count_the_template_and_are_capped(tiny_llama):
    model = build_model(str(tiny_llama), template="eol")
    plain = build_model(str(tiny_llama))
    assert token_lengths(model, ["a man"])[0] > token_lengths(plain, ["a man"])[0]
    assert token_lengths(model, [LONG])[0] == model.max_seq_length


def test_encode_unique_keys_every_distinct_text_once(tiny_bert, monkeypatch):
    from pcctune.modeling import encoding

    model = build_model(str(tiny_bert))
    encoded: list[str] = []

    def counting(model, texts, **options):
        encoded.extend(texts)
        return encode_texts(model, texts, **options)

    monkeypatch.setattr(encoding, "encode_texts", counting)
    vectors = encode_unique(model, [*SENTENCES, *SENTENCES], show_progress=False)
    monkeypatch.undo()
    assert set(vectors) == set(SENTENCES) and sorted(encoded) == sorted(set(SENTENCES))
    np.testing.assert_allclose(vectors[SENTENCES[0]], encode_texts(model, [SENTENCES[0]])[0], atol=1e-6)


@pytest.mark.parametrize("fixture", ["tiny_llama", "metaspace_llama"])
@pytest.mark.parametrize("adapter", [None, "lora"])
def test_a_decoder_runs_its_template_prefix_once_with_the_same_embeddings(fixture, adapter, request, monkeypatch):
    from pcctune.modeling import prefix_cache
    from pcctune.modeling.adapters import attach_adapter
    from pcctune.training.config import AdapterConfig

    model = build_model(str(request.getfixturevalue(fixture)), template="eol")
    if adapter:
        attach_adapter(model, AdapterConfig(kind=adapter, r=4, alpha=8))
    prefix = prefix_cache.cached_prefix(model)
    assert prefix is not None and len(prefix.ids) >= 3  # 'This sentence : "' (and a BOS where the tokenizer adds one)
    _assert_every_batch_runs_over_the_prefix_to_the_same_embeddings(model, monkeypatch)


def _assert_every_batch_runs_over_the_prefix_to_the_same_embeddings(model, monkeypatch):
    from pcctune.modeling import prefix_cache

    cached_batches = []
    real_embed = prefix_cache.CachedPrefix.embed
    monkeypatch.setattr(
        prefix_cache.CachedPrefix, "embed", lambda self, m, f: cached_batches.append(1) or real_embed(self, m, f)
    )
    texts = [*SENTENCES, LONG, "a"]
    cached = encode_texts(model, texts, token_budget=64)
    whole = encode_texts(model, texts, token_budget=64, reuse_prefix=False)
    assert len(cached_batches) == len(length_batches(token_lengths(model, texts), 64))
    np.testing.assert_allclose(cached, whole, atol=1e-5)


@pytest.mark.parametrize("fixture", ["tiny_llama", "metaspace_llama"])
def test_a_decoder_saved_natively_runs_its_prefix_once_too(fixture, request, tmp_path, monkeypatch):
    """A model saved as plain sentence-transformers (``pcctune icl`` saves one) loads with ST's own input
    module; padding on the right, its rows' positions continue from the prefix's as well."""
    from sentence_transformers import SentenceTransformer

    from pcctune.modeling.prefix_cache import cached_prefix
    from pcctune.modeling.saving import save_native
    from pcctune.modeling.template import TemplateTransformer

    native = tmp_path / "native"
    trained = build_model(str(request.getfixturevalue(fixture)), template="eol")
    save_native(trained, native)
    model = SentenceTransformer(str(native))  # right-padded in plain ST too (Llama-2-style tokenizers default left)
    assert type(model[0]) is not TemplateTransformer and model[0].tokenizer.padding_side == "right"
    texts = [*SENTENCES, LONG]  # batches mix lengths: padded rows embed as they did in pcctune
    np.testing.assert_allclose(model.encode(texts, batch_size=4), encode_texts(trained, texts), atol=1e-5)
    _assert_every_batch_runs_over_the_prefix_to_the_same_embeddings(model, monkeypatch)
    model[0].tokenizer.padding_side = "left"  # pads would come before the prefix: encoded whole
    assert cached_prefix(model) is None

    config = json.loads((native / "tokenizer_config.json").read_text())
    del config["padding_side"]  # a folder saved before the padding side was kept: pcctune loads it right-padded
    (native / "tokenizer_config.json").write_text(json.dumps(config))
    assert build_model(str(native))[0].tokenizer.padding_side == "right"


def test_only_a_batch_that_starts_with_the_prefix_uses_it_and_encoders_never_do(tiny_llama, tiny_bert):
    import torch

    from pcctune.modeling.prefix_cache import cached_prefix

    assert cached_prefix(build_model(str(tiny_bert), template="eol")) is None  # attention sees both ways
    assert cached_prefix(build_model(str(tiny_llama))) is None  # no template
    prefix = cached_prefix(build_model(str(tiny_llama), template="eol"))
    assert prefix is not None
    rows = torch.cat([prefix.ids, torch.tensor([7, 8])]).repeat(2, 1)
    assert prefix.covers(rows)
    rows[1, len(prefix.ids) - 1] = 9  # a tokenizer merged the last prefix token with the sentence
    assert not prefix.covers(rows) and not prefix.covers(rows[:, : len(prefix.ids)])


@pytest.mark.parametrize("kind", ["deep", "shallow"])
def test_a_decoder_with_continuous_prompts_and_a_template_is_encoded_whole(tiny_llama, kind):
    """DCPCSE's prompted module has a forward of its own that takes no key/value cache: the template's cached prefix
    would be dropped and the sentence read without it (or fail), so such a model is encoded as ``encode`` does."""
    from pcctune.modeling.prefix_cache import cached_prefix

    model = build_model(str(tiny_llama), template="eol", prompt={"prompt_kind": kind, "prompt_length": 4})
    assert cached_prefix(model) is None
    np.testing.assert_allclose(encode_texts(model, SENTENCES, reuse_prefix=True), model.encode(SENTENCES), atol=1e-5)


@pytest.mark.parametrize(
    ("fixture", "budget"), [("tiny_bert", ENCODER_TOKEN_BUDGET), ("tiny_llama", DECODER_TOKEN_BUDGET)]
)
def test_the_default_budget_depends_on_the_model_kind(fixture, budget, request, monkeypatch):
    import pcctune.modeling.encoding as encoding

    model = build_model(str(request.getfixturevalue(fixture)))
    asked: list[int] = []
    real = encoding.length_batches

    def spy(lengths, token_budget, *args):
        asked.append(token_budget)
        return real(lengths, token_budget, *args)

    monkeypatch.setattr(encoding, "length_batches", spy)
    encode_texts(model, SENTENCES[:3])
    encode_texts(model, SENTENCES[:3], token_budget=32)
    assert asked == [budget, 32] and DECODER_TOKEN_BUDGET != ENCODER_TOKEN_BUDGET


def test_a_static_embedding_model_is_scored_on_the_vectors_encode_gives(tiny_bert, shared_senteval, tmp_path):
    """A StaticEmbedding model (one module, a bag of tokens, a bare tokenizers.Tokenizer) encodes as ``encode`` does
    and is evaluated, cache key and record included."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    from pcctune.modeling.fingerprint import describe_modules
    from pcctune.orchestration.evaluate import run_eval

    model = SentenceTransformer(
        modules=[StaticEmbedding(Tokenizer.from_file(str(tiny_bert / "tokenizer.json")), embedding_dim=8)]
    )
    texts = [*SENTENCES[:5], ""]
    np.testing.assert_allclose(encode_texts(model, texts), model.encode(texts, convert_to_numpy=True), atol=1e-6)
    assert describe_modules(model) is not None
    model.save(str(tmp_path / "static"))
    record = run_eval(str(tmp_path / "static"), shared_senteval, output=tmp_path / "r.json")
    assert record.pooling is None and set(record.sts or {}) >= {"STS12", "avg"}
