"""The fast encoding path: the same embeddings as sentence-transformers' encode, in input order."""

from __future__ import annotations

import numpy as np
import pytest

from pcctune.modeling.build import build_model
from pcctune.modeling.encoding import encode_texts, encode_unique, length_batches, token_lengths
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


def test_encode_unique_keys_every_distinct_text_once(tiny_bert):
    model = build_model(str(tiny_bert))
    vectors = encode_unique(model, [*SENTENCES, *SENTENCES], show_progress=False)
    assert set(vectors) == set(SENTENCES)
    np.testing.assert_allclose(vectors[SENTENCES[0]], encode_texts(model, [SENTENCES[0]])[0], atol=1e-6)
