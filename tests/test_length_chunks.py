"""A training batch embedded in length-sorted chunks: the same embeddings and gradients, fewer padded tokens."""

from __future__ import annotations

import itertools
import logging
import random

import pytest
import torch
from pydantic import ValidationError
from sentence_transformers.base.losses import column_merging_disabled
from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss, Matryoshka2dLoss

from pcctune.losses.length_chunks import (
    CHUNK_OVERHEAD_TOKENS,
    LengthChunker,
    Padding,
    chunk_bounds,
    split_bounds,
)
from pcctune.losses.pearson import PearsonLoss
from pcctune.modeling.build import build_model
from pcctune.training.config import StageConfig
from pcctune.training.losses import build_loss
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
    chunked = LengthChunker("on")(lambda f: seen.append(f) or model(f)["sentence_embedding"], columns)
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

    LengthChunker("on")(embed, columns)
    padded = sum(f["input_ids"].numel() for f in columns)
    assert len(seen) > 1 and sum(f["input_ids"].numel() for f in seen) < padded
    extra = {key: value for key, value in columns[0].items() if not isinstance(value, torch.Tensor)}
    assert all(f[key] == value for f in seen for key, value in extra.items())
    assert all(bool(f["attention_mask"][:, -1].any()) for f in seen)  # each chunk cut to its longest row


def test_columns_padded_on_different_sides_or_with_unequal_entries_are_embedded_whole(tiny_bert):
    model = build_model(str(tiny_bert))
    columns = _columns(model, SENTENCES[:4], SENTENCES[4:8])
    left = {**columns[1], "attention_mask": columns[1]["attention_mask"].flip(1)}
    for case in ([columns[0], left], [columns[0], {**columns[1], "extra": torch.zeros(3)}]):
        seen: list[dict] = []
        LengthChunker("on")(lambda f, seen=seen: seen.append(f) or torch.zeros(len(f["input_ids"]), 2), case)
        assert [id(f) for f in seen] == [id(f) for f in case]


@pytest.mark.parametrize("side", ["right", "left"])
def test_chunks_are_padded_as_the_tokenizer_pads_its_side_and_pad_id(tiny_llama, side):
    """The tiny Llama pads with id 6 (its EOS): a row of a narrower column padded in a chunk gets 6, not 0, on the
    tokenizer's side; left-padded columns are cut too, with the embeddings of the padded block."""
    model = build_model(str(tiny_llama))
    model.eval()
    model.tokenizer.padding_side = side
    pad_id = model.tokenizer.pad_token_id
    assert pad_id != 0
    long = " ".join(SENTENCES[:4])
    columns = _columns(model, [long, "a b", "a", "b c d"], ["a b c", "d e f", "g h i", "j k l"])
    seen: list[dict] = []
    padding = Padding.of(model.tokenizer)
    chunked = LengthChunker("on")(lambda f: seen.append(f) or model(f)["sentence_embedding"], columns, padding)
    assert len(seen) > 1  # the long text has a chunk of its own
    for chunk in seen:
        mask = chunk["attention_mask"]
        assert bool((chunk["input_ids"][mask == 0] == pad_id).all())
        assert bool(mask[0].all())  # cut to its longest row, its first
        steps = mask.diff(dim=1)  # where padding starts (right) or ends (left)
        assert bool((steps <= 0).all()) if side == "right" else bool((steps >= 0).all())
    for features, ours in zip(columns, chunked, strict=True):
        torch.testing.assert_close(ours, model(dict(features))["sentence_embedding"], atol=1e-5, rtol=1e-5)


def test_rows_of_a_narrower_column_are_padded_with_masked_positions(tiny_bert):
    model = build_model(str(tiny_bert))
    model.eval()
    columns = _columns(model, [" ".join(SENTENCES[:2]), *SENTENCES[2:5]], ["a", "b c", "d", "e f"])
    assert columns[0]["input_ids"].shape[1] > columns[1]["input_ids"].shape[1]
    seen: list[dict] = []
    chunked = LengthChunker("on")(lambda f: seen.append(f) or model(f)["sentence_embedding"], columns)
    assert len(seen) == 1 and seen[0]["attention_mask"].shape[1] == columns[0]["attention_mask"].shape[1]
    for features, ours in zip(columns, chunked, strict=True):
        torch.testing.assert_close(ours, model(dict(features))["sentence_embedding"], atol=1e-5, rtol=1e-5)


def test_a_split_keeps_the_rows_in_order_and_reaches_the_count():
    assert split_bounds([(0, 1), (1, 9)], 4) == [(0, 1), (1, 3), (3, 5), (5, 9)]
    assert split_bounds([(0, 3)], 3) == [(0, 1), (1, 2), (2, 3)]
    assert split_bounds([(0, 2), (2, 5)], 2) == [(0, 2), (2, 5)]


def _wrapped(kind: str, model, inner):
    if kind == "adaptive_layer":
        return AdaptiveLayerLoss(model, inner, n_layers_per_step=-1)
    return Matryoshka2dLoss(model, inner, [32, 16], n_layers_per_step=-1, n_dims_per_step=-1)


@pytest.mark.parametrize("kind", ["adaptive_layer", "matryoshka_2d"])
def test_wrapper_losses_that_hand_state_through_the_features_give_the_unchunked_loss_and_gradients(tiny_bert, kind):
    """sentence-transformers' AdaptiveLayerLoss (and Matryoshka2dLoss on it) call the inner loss once per layer
    with the same feature dicts, the first call leaving every layer's embeddings in them: chunks built from
    fresh dicts would make the second call fail (KeyError: 'all_layer_embeddings')."""
    model = build_model(str(tiny_bert))
    model.eval()
    long = " ".join(SENTENCES[:3])
    first, second = [*SENTENCES[:5], long], ["b", long, *SENTENCES[5:9]]
    labels = torch.linspace(0, 5, len(first))
    assert len(_chunks(model, first, second)) > 1  # outside a wrapper, this batch is chunked

    def run(mode: str):
        inner = PearsonLoss(model)
        inner.length_chunks = LengthChunker(mode)
        loss = _wrapped(kind, model, inner)(_columns(model, first, second), labels)
        model.zero_grad()
        loss.backward()
        return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    (chunked, chunked_grads), (plain, plain_grads) = run("on"), run("off")
    torch.testing.assert_close(chunked, plain)
    assert chunked_grads.keys() == plain_grads.keys() and len(plain_grads) > 1
    for name, grad in plain_grads.items():
        torch.testing.assert_close(chunked_grads[name], grad, msg=name)


def test_inside_column_merging_disabled_each_column_is_its_own_dict_and_chunked_again_after(tiny_bert):
    model = build_model(str(tiny_bert))
    first, second = [*SENTENCES[:5], " ".join(SENTENCES[:3])], SENTENCES[4:10]
    columns = _columns(model, first, second)
    seen: list[dict] = []
    with column_merging_disabled():
        LengthChunker("on")(lambda f: seen.append(f) or model(f)["sentence_embedding"], columns)
    assert [id(f) for f in seen] == [id(f) for f in columns]
    assert len(_chunks(model, first, second)) > 1


def _chunks(model, first: list[str], second: list[str], mode: str = "on") -> list[dict]:
    seen: list[dict] = []
    LengthChunker(mode)(lambda f: seen.append(f) or model(f)["sentence_embedding"], _columns(model, first, second))
    return seen


def test_the_switch_turns_chunks_off_and_each_setting_is_said_once(tiny_bert, caplog):
    model = build_model(str(tiny_bert))
    first, second = [" ".join(SENTENCES[:3]), *SENTENCES[:4]], SENTENCES[4:9]
    columns = _columns(model, first, second)
    with caplog.at_level(logging.INFO, logger="pcctune.losses.length_chunks"):
        off = LengthChunker("off")
        for _ in range(2):
            seen: list[dict] = []
            off(lambda f, seen=seen: seen.append(f) or model(f)["sentence_embedding"], columns)
            assert [id(f) for f in seen] == [id(f) for f in columns]  # each column whole, its own dict
        on = LengthChunker("auto")
        for _ in range(2):
            on(lambda f: model(f)["sentence_embedding"], _columns(model, first, second))
    lines = [record.getMessage() for record in caplog.records]
    assert sum(line.startswith("length chunks off (length_chunks: off)") for line in lines) == 1
    assert sum(line.startswith("length chunks on") for line in lines) == 1


def test_a_stage_sets_the_switch_of_its_loss_and_refuses_it_for_a_loss_that_cannot_chunk(tiny_bert):
    data = {"source": "stage2"}
    stage = StageConfig(name="s", loss="pearson", data=data, length_chunks="off")
    assert build_loss(stage, build_model(str(tiny_bert)), None).length_chunks.mode == "off"
    assert StageConfig(name="s", loss="pearson", data=data).length_chunks == "auto"
    with pytest.raises(ValidationError, match="length_chunks: on applies to pcctune's own losses"):
        StageConfig(name="s", loss="cosent", data=data, length_chunks="on")
