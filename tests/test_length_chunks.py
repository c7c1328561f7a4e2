"""A training batch embedded in length-sorted chunks: the same embeddings and gradients, fewer padded tokens."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from pcctune.losses.length_chunks import CHUNK_OVERHEAD_TOKENS, chunk_bounds, embed_in_length_chunks
from pcctune.losses.pearson import PearsonLoss
from pcctune.modeling.build import build_model
from tests.conftest import SENTENCES


def _cost(lengths: list[int], bounds: list[tuple[int, int]]) -> int:
    return sum((end - start) * lengths[start] + CHUNK_OVERHEAD_TOKENS for start, end in bounds)


def _every_split(count: int):
    for cuts in itertools.product([False, True], repeat=count - 1):
        edges = [0, *(i + 1 for i, cut in enumerate(cuts) if cut), count]
        yield list(itertools.pairwise(edges))


@pytest.mark.parametrize("seed", range(6))
def test_the_chunks_are_the_cheapest_split_of_the_sorted_lengths(seed):
    rng = random.Random(seed)
    lengths = sorted((rng.choice([3, 5, 8, 40, 90, 200]) for _ in range(rng.randint(1, 9))), reverse=True)
    bounds = chunk_bounds(lengths)
    assert [start for start, _ in bounds] == [0, *(end for _, end in bounds[:-1])] and bounds[-1][1] == len(lengths)
    assert _cost(lengths, bounds) == min(_cost(lengths, split) for split in _every_split(len(lengths)))


def test_equal_lengths_stay_one_chunk_and_a_long_outlier_gets_its_own():
    assert chunk_bounds([12] * 40) == [(0, 40)]
    assert chunk_bounds([300, *[10] * 40]) == [(0, 1), (1, 41)]


def _columns(model, first: list[str], second: list[str]) -> list[dict]:
    return [model.preprocess(texts) for texts in (first, second)]


def _gradients(model, loss_of_model) -> dict[str, torch.Tensor]:
    model.zero_grad()
    loss_of_model().backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama"])
def test_a_chunked_batch_gives_the_embeddings_and_gradients_of_the_padded_block(fixture, request):
    model = build_model(str(request.getfixturevalue(fixture)))
    model.eval()  # no dropout: the two passes must see the same network
    long = " ".join(SENTENCES[:3])
    first, second = [*SENTENCES, long, "a"], ["b", long, *reversed(SENTENCES)]
    columns = _columns(model, first, second)
    plain = [model(dict(f))["sentence_embedding"] for f in columns]  # a copy: the model adds its outputs to it
    seen: list[dict] = []
    chunked = embed_in_length_chunks(lambda f: seen.append(f) or model(f)["sentence_embedding"], columns)
    assert len(seen) > 1  # the long text has a chunk of its own
    for whole, parts in zip(plain, chunked, strict=True):
        torch.testing.assert_close(parts, whole, atol=1e-5, rtol=1e-5)
    loss, labels = PearsonLoss(model), torch.linspace(0, 5, len(first))
    reference = _gradients(
        model, lambda: loss.loss_from_embeddings([model(dict(f))["sentence_embedding"] for f in columns], labels)
    )
    ours = _gradients(model, lambda: loss(columns, labels))  # the loss's own forward: chunked
    assert reference.keys() == ours.keys() and len(ours) > 1
    for name in reference:
        torch.testing.assert_close(ours[name], reference[name], atol=1e-5, rtol=1e-4, msg=name)


def test_chunks_carry_fewer_padded_tokens_and_pass_other_entries_on(tiny_bert):
    model = build_model(str(tiny_bert))
    texts = ["a", "b c", " ".join(SENTENCES[:3]), *SENTENCES]
    columns = _columns(model, texts, list(reversed(texts)))
    seen: list[dict] = []

    def embed(features):
        seen.append(features)
        return model(features)["sentence_embedding"]

    embed_in_length_chunks(embed, columns)
    padded = sum(f["input_ids"].numel() for f in columns)
    assert len(seen) > 1 and sum(f["input_ids"].numel() for f in seen) < padded
    extra = {key: value for key, value in columns[0].items() if not isinstance(value, torch.Tensor)}
    assert all(f[key] == value for f in seen for key, value in extra.items())
    assert all(bool(f["attention_mask"][:, -1].any()) for f in seen)  # each chunk cut to its longest row


def test_left_padding_or_unequal_entries_are_embedded_whole(tiny_bert):
    model = build_model(str(tiny_bert))
    columns = _columns(model, SENTENCES[:4], SENTENCES[4:8])
    left = [{**f, "attention_mask": f["attention_mask"].flip(1), "input_ids": f["input_ids"].flip(1)} for f in columns]
    other = [columns[0], {**columns[1], "extra": torch.zeros(3)}]
    for case in (left, other):
        seen: list[dict] = []
        embed_in_length_chunks(lambda f, seen=seen: seen.append(f) or torch.zeros(len(f["input_ids"]), 2), case)
        assert [id(f) for f in seen] == [id(f) for f in case]


def test_rows_of_a_narrower_column_are_padded_with_masked_positions(tiny_bert):
    model = build_model(str(tiny_bert))
    model.eval()
    columns = _columns(model, [" ".join(SENTENCES[:2]), *SENTENCES[2:5]], ["a", "b c", "d", "e f"])
    assert columns[0]["input_ids"].shape[1] > columns[1]["input_ids"].shape[1]
    seen: list[dict] = []
    chunked = embed_in_length_chunks(lambda f: seen.append(f) or model(f)["sentence_embedding"], columns)
    assert len(seen) == 1 and seen[0]["attention_mask"].shape[1] == columns[0]["attention_mask"].shape[1]
    for features, ours in zip(columns, chunked, strict=True):
        torch.testing.assert_close(ours, model(dict(features))["sentence_embedding"], atol=1e-5, rtol=1e-5)
