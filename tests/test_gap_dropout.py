"""Dropout drawn by its gaps: nn.Dropout's masks (their rate, independence and scaling), its gradients, a seed's
replay, and the model's own dropout class back after the block."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from pcctune.modeling.gap_dropout import LARGEST_P, GapDropout, dropped_positions, gap_dropout


@pytest.mark.parametrize("p", [0.05, 0.2])
def test_the_dropped_positions_have_bernoullis_rate_and_no_pattern(p):
    torch.manual_seed(0)
    count = 400_000
    mask = torch.zeros(count, dtype=torch.bool)
    positions = dropped_positions(count, p)
    mask[positions] = True
    assert positions.unique().numel() == positions.numel() and 0 <= int(positions.min()) and positions.max() < count
    sigma = math.sqrt(p * (1 - p) / count)
    assert abs(mask.float().mean().item() - p) < 5 * sigma
    both = (mask[1:] & mask[:-1]).float().mean().item()  # neighbours dropped together: p² if independent
    assert abs(both - p * p) < 5 * math.sqrt(p * p / count)
    blocks = mask.view(-1, 100).float().mean(1)  # rate in blocks of 100 elements: Binomial(100, p) / 100's spread
    assert abs(blocks.var().item() - p * (1 - p) / 100) < 0.1 * p * (1 - p) / 100


def test_a_few_elements_and_an_unlikely_long_tail_still_get_their_positions():
    torch.manual_seed(1)
    for count in (1, 2, 7, 50):
        positions = dropped_positions(count, 0.2)
        assert (positions < count).all() and (positions >= 0).all()


def test_gap_dropout_scales_what_it_keeps_and_its_gradient_is_the_same_mask():
    torch.manual_seed(2)
    layer = GapDropout(0.1).train()
    inputs = torch.rand(64, 96) + 1.0  # no zeros of its own
    inputs.requires_grad_(True)
    output = layer(inputs)
    (gradient,) = torch.autograd.grad(output.sum(), [inputs])
    kept = output != 0
    torch.testing.assert_close(output[kept], inputs.detach()[kept] / 0.9)
    torch.testing.assert_close(gradient, kept.float() / 0.9)
    assert 0.05 < 1 - kept.float().mean().item() < 0.15


def test_the_same_random_state_gives_the_same_mask_as_a_replayed_forward_needs():
    layer = GapDropout(0.05).train()
    inputs = torch.ones(32, 48)
    state = torch.get_rng_state()
    first = layer(inputs)
    torch.set_rng_state(state)
    assert torch.equal(layer(inputs), first)
    assert not torch.equal(layer(inputs), first)


def test_outside_training_at_a_large_rate_or_zero_it_is_nn_dropout():
    inputs = torch.ones(8, 8)
    assert torch.equal(GapDropout(0.05).eval()(inputs), inputs)
    assert torch.equal(GapDropout(0.0).train()(inputs), inputs)
    torch.manual_seed(3)
    expected = nn.Dropout(0.5).train()(inputs)
    torch.manual_seed(3)
    assert LARGEST_P < 0.5 and torch.equal(GapDropout(0.5).train()(inputs), expected)


def test_the_block_gives_plain_dropout_layers_the_sampler_and_their_class_back():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Sequential(nn.Dropout(0.05)), nn.Identity())
    with gap_dropout(model) as count:
        assert count == 2 and {type(m) for m in model.modules() if isinstance(m, nn.Dropout)} == {GapDropout}
    assert {type(m) for m in model.modules() if isinstance(m, nn.Dropout)} == {nn.Dropout}
    with gap_dropout(model, active=False) as count:
        assert count == 0 and type(model[1]) is nn.Dropout


@pytest.mark.parametrize("sampler", ["gaps", "torch"])
def test_a_run_draws_its_dropout_masks_by_gaps_only_when_told(sampler, tiny_bert, shared_senteval, tmp_path):
    from unittest import mock

    import pcctune
    from pcctune.modeling import gap_dropout as module
    from tests.conftest import pairs_jsonl, tiny_run

    config = tiny_run(tiny_bert, shared_senteval, pairs_jsonl(tmp_path / "pairs.jsonl"), tmp_path / "run")
    config["dropout_sampler"] = sampler
    config["stages"][0] |= {"max_steps": 2, "dev": "none"}
    with mock.patch.object(module, "dropped_positions", wraps=module.dropped_positions) as drawn:
        pcctune.train(pcctune.RunConfig.model_validate(config), overwrite=True)
    assert (drawn.call_count > 0) == (sampler == "gaps")  # tiny BERT's hidden dropout (0.1) in both steps
