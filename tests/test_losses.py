"""Pearson and InfoNCE losses: values against hand computations, edge cases, caching."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import pearsonr

from pcctune.losses import InfoNCELoss, PearsonLoss
from pcctune.losses.infonce import info_nce
from pcctune.losses.pearson import pearson_loss, pearson_r
from pcctune.modeling.build import build_model
from pcctune.training.batching import plan_batches
from tests.conftest import SENTENCES


def test_pearson_r_equals_scipy_with_one_estimator():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    r = pearson_r(torch.tensor(x), torch.tensor(y)).item()
    assert r == pytest.approx(pearsonr(x, y).statistic, abs=1e-9)
    # The reference implementation's mixed estimators give r·(n−1)/n instead.
    assert abs(r - pearsonr(x, y).statistic * 49 / 50) > 1e-4


def test_pearson_loss_of_perfectly_correlated_pairs_is_zero():
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])  # cos = 1, 0.707, 0
    assert pearson_loss(u, v, torch.tensor([5.0, 3.535, 0.0])).item() == pytest.approx(0.0, abs=1e-4)
    assert pearson_loss(u, v, torch.tensor([0.0, 1.4645, 5.0])).item() == pytest.approx(2.0, abs=1e-4)


def test_bf16_inputs_accumulate_in_fp32():
    u = torch.randn(16, 8, dtype=torch.bfloat16)
    v = torch.randn(16, 8, dtype=torch.bfloat16)
    loss = pearson_loss(u, v, torch.rand(16))
    assert loss.dtype == torch.float32


def test_constant_gold_scores_give_loss_one_zero_gradient_and_a_warning():
    u = torch.randn(4, 3, requires_grad=True)
    v = torch.randn(4, 3)
    with pytest.warns(UserWarning, match="all gold scores of the group are equal"):
        loss = pearson_loss(u, v, torch.full((4,), 3.0))
    loss.backward()
    assert loss.item() == pytest.approx(1.0)
    assert torch.all(u.grad == 0)


def test_one_pair_gives_loss_one_and_a_warning():
    u = torch.randn(1, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="one pair"):
        loss = pearson_loss(u, torch.randn(1, 3), torch.tensor([2.0]))
    loss.backward()
    assert loss.item() == pytest.approx(1.0) and torch.isfinite(u.grad).all()


def test_nan_gold_score_is_an_error():
    with pytest.raises(ValueError, match="contain NaN"):
        pearson_loss(torch.randn(3, 2), torch.randn(3, 2), torch.tensor([1.0, float("nan"), 2.0]))


def test_equal_cosines_give_finite_gradient():
    u = torch.ones(3, 2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = pearson_loss(u, torch.ones(3, 2), torch.tensor([1.0, 2.0, 3.0]))
    loss.backward()
    assert torch.isfinite(u.grad).all()


def test_info_nce_by_hand():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    p = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    n = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    tau = 0.5
    cos = lambda x, y: float(F.cosine_similarity(x, y, dim=0))  # noqa: E731
    expected = 0.0
    for i in range(2):
        numerator = math.exp(cos(a[i], p[i]) / tau)
        denominator = sum(math.exp(cos(a[i], p[j]) / tau) + math.exp(cos(a[i], n[j]) / tau) for j in range(2))
        expected += -math.log(numerator / denominator) / 2
    assert info_nce(a, p, n, tau).item() == pytest.approx(expected, abs=1e-6)
    pairs_only = (
        sum(
            -math.log(math.exp(cos(a[i], p[i]) / tau) / sum(math.exp(cos(a[i], p[j]) / tau) for j in range(2)))
            for i in range(2)
        )
        / 2
    )
    assert info_nce(a, p, None, tau).item() == pytest.approx(pairs_only, abs=1e-6)


def assert_plain_equals_cached(tiny_bert, make_loss, columns: list[list[str]], labels: torch.Tensor) -> None:
    """``make_loss(model, mini_batch)`` without mini-batches and with mini-batches of 3 (GradCache) gives the same
    loss and the same gradients on ``columns``."""
    results = []
    for mini_batch in (None, 3):
        model = build_model(str(tiny_bert), device="cpu")
        model.eval()
        loss = make_loss(model, mini_batch)([model.preprocess(c) for c in columns], labels)
        loss.backward()
        gradients = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        results.append((loss.item(), gradients))
    (plain_loss, plain), (cached_loss, cached) = results
    assert plain_loss == pytest.approx(cached_loss, abs=1e-6)
    assert plain.keys() == cached.keys() and any(grad.abs().sum() > 0 for grad in plain.values())
    assert all(torch.allclose(plain[name], cached[name], atol=1e-5) for name in plain)


@pytest.mark.parametrize("kind", ["pearson", "infonce"])
def test_gradient_cache_equals_the_plain_loss(tiny_bert, kind):
    """Mini-batches (which replace gradient accumulation) leave loss and gradients unchanged."""
    columns = [SENTENCES[:8], SENTENCES[2:10]] + ([SENTENCES[4:12]] if kind == "infonce" else [])
    labels = torch.tensor([0.5, 4.2, 2.0, 3.3, 1.1, 4.9, 2.7, 0.0])
    make = (lambda m, b: PearsonLoss(m, b)) if kind == "pearson" else (lambda m, b: InfoNCELoss(m, 0.05, b))
    assert_plain_equals_cached(tiny_bert, make, columns, labels)


@pytest.mark.parametrize("name", ["cosent", "angle", "cosine_mse"])
def test_sentence_transformers_pair_losses_in_mini_batches_equal_their_own_forward(tiny_bert, name):
    """A stage's mini_batch_size embeds sentence-transformers' scored-pair losses GradCache-style: the loss and the
    gradients of sentence-transformers' own forward over the whole batch."""
    from pcctune.losses.cached_pairs import CachedPairLoss
    from pcctune.losses.registry import loss_spec
    from pcctune.training.config import StageConfig
    from pcctune.training.losses import build_loss

    stage = StageConfig.model_validate({"name": "s", "loss": name, "data": {"source": "stage2"}})

    def make(model, mini_batch):
        loss = build_loss(stage, model, mini_batch)
        assert type(loss) is (CachedPairLoss if mini_batch else loss_spec(name).cls)
        return loss

    labels = torch.tensor([0.1, 0.84, 0.4, 0.66, 0.22, 0.98, 0.54, 0.0])
    assert_plain_equals_cached(tiny_bert, make, [SENTENCES[:8], SENTENCES[2:10]], labels)


def test_a_loss_head_under_gradient_cache_takes_the_outer_scale_as_the_encoder_does(tiny_bert):
    """The trainer scales a loss before its backward (gradient accumulation divides it, fp16's scaler multiplies
    it); GradCache's replay scales the encoder's gradients by it, and the regression head's must follow, or a
    scaled step trains the head at another rate than the encoder (with fp16's scaler, at none)."""
    from pcctune.losses.regression import RegressionLoss

    columns, labels = [SENTENCES[:8], SENTENCES[2:10]], torch.tensor([0.5, 4.2, 2.0, 3.3, 1.1, 4.9, 2.7, 0.0])
    results = []
    for mini_batch in (None, 3):
        model = build_model(str(tiny_bert), device="cpu")
        model.eval()
        torch.manual_seed(0)
        loss = RegressionLoss(model, model.get_embedding_dimension(), mini_batch_size=mini_batch)
        (loss([model.preprocess(c) for c in columns], labels) * 0.25).backward()
        results.append({name: p.grad.clone() for name, p in loss.named_parameters() if p.grad is not None})
    plain, cached = results
    assert plain.keys() == cached.keys() and {"head.weight", "head.bias"} <= plain.keys()
    assert all(torch.allclose(plain[name], cached[name], atol=1e-6) for name in plain)


@pytest.mark.parametrize("world", [1, 2, 4, 8])
@pytest.mark.parametrize("accumulation", [1, 2, 4])
def test_group_size_does_not_depend_on_processes_or_accumulation(world, accumulation):
    plan = plan_batches(64, world_size=world, accumulation_steps=accumulation)
    assert plan.per_device_batch_size * world * plan.gradient_accumulation_steps == 64
    assert plan.gradient_accumulation_steps == 1
    if accumulation > 1:  # the memory of accumulation, through mini-batches instead
        assert plan.mini_batch_size == 64 // world // accumulation


def test_group_not_divisible_by_processes():
    from pcctune.errors import PcctuneError

    with pytest.raises(PcctuneError, match="not divisible"):
        plan_batches(10, world_size=4)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda m: InfoNCELoss(m, temperature=0), "temperature must be above 0"),
        (lambda m: PearsonLoss(m, mini_batch_size=0), "mini_batch_size must be at least 1"),
        ("soft_spearman", "regularization must be above 0"),
        ("pearson_plus", "extra must be mse or cosent"),
        ("regression_concat", "concat must be uv or absdiff or uv_absdiff"),
        ("regression_penalty", "penalty_name must be"),
    ],
)
def test_a_loss_refuses_a_bad_setting_when_it_is_built(build, message):
    """Not at the first forward pass, as a NaN or an error from deep inside torch."""
    from pcctune.losses.pearson_plus import PearsonPlusLoss
    from pcctune.losses.regression import RegressionLoss
    from pcctune.losses.soft_spearman import SoftSpearmanLoss

    builders = {
        "soft_spearman": lambda m: SoftSpearmanLoss(m, regularization=0),
        "pearson_plus": lambda m: PearsonPlusLoss(m, extra="bogus"),
        "regression_concat": lambda m: RegressionLoss(m, 4, concat="bogus"),
        "regression_penalty": lambda m: RegressionLoss(m, 4, penalty_name="bogus"),
    }
    with pytest.raises(ValueError, match=message):
        (builders.get(build) or build)(torch.nn.Identity())


def test_gold_scores_that_are_not_finite_are_refused_by_every_pearson_loss():
    from pcctune.losses.pearson_by_source import SourcePearsonLoss

    u, v = torch.randn(4, 8), torch.randn(4, 8)
    with pytest.raises(ValueError, match="NaN or infinity"):
        PearsonLoss(torch.nn.Identity()).loss_from_embeddings([u, v], torch.tensor([1.0, 2.0, math.inf, 3.0]))
    labels = torch.tensor([[1.0, 0], [math.nan, 0], [2.0, 1], [3.0, 1]])
    with pytest.raises(ValueError, match="NaN or infinity"):
        SourcePearsonLoss(torch.nn.Identity()).loss_from_embeddings([u, v], labels)


def test_regression_refuses_labels_that_do_not_match_its_pairs():
    from pcctune.losses.regression import RegressionLoss

    loss = RegressionLoss(torch.nn.Identity(), 8)
    u, v = torch.randn(4, 8), torch.randn(4, 8)
    for labels in (torch.tensor([1.0]), torch.tensor([1.0, math.nan, 2.0, 3.0])):
        with pytest.raises(ValueError, match="one finite label per pair"):
            loss.loss_from_embeddings([u, v], labels)
