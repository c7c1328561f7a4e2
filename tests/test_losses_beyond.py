"""Stage-2 losses beyond the paper: per-source Pearson, Pearson plus MSE/CoSENT, soft Spearman; source groups."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr, spearmanr
from sentence_transformers import SentenceTransformer
from sklearn.isotonic import IsotonicRegression

from pcctune.losses.pearson_by_source import source_pearson_loss
from pcctune.losses.pearson_plus import cosent_term, mse_term
from pcctune.losses.soft_spearman import hard_rank, isotonic_decreasing, soft_rank
from pcctune.training.sampling import SourceBatchSampler
from tests.conftest import pairs_jsonl

COS = torch.tensor([0.9, 0.1, 0.5, 0.7, 0.2, 0.8], dtype=torch.float64)
GOLD = torch.tensor([4.5, 0.5, 3.0, 2.0, 1.0, 5.0], dtype=torch.float64)
SOURCE = torch.tensor([0, 0, 0, 1, 1, 1])


def test_source_pearson_by_hand():
    r0 = pearsonr(COS[:3].numpy(), GOLD[:3].numpy()).statistic
    r1 = pearsonr(COS[3:].numpy(), GOLD[3:].numpy()).statistic
    expected = 1 - (3 * r0 + 3 * r1) / 6
    assert source_pearson_loss(COS, GOLD, SOURCE).item() == pytest.approx(expected)
    # a source with one pair (or constant gold) has no correlation and is left out
    assert source_pearson_loss(COS[:4], GOLD[:4], SOURCE[:4]).item() == pytest.approx(1 - r0)
    # differs from plain Pearson over the mixed group
    assert expected != pytest.approx(1 - pearsonr(COS.numpy(), GOLD.numpy()).statistic)


def test_mse_and_cosent_terms_by_hand():
    assert mse_term(COS, GOLD, 5.0).item() == pytest.approx(float(((COS - GOLD / 5) ** 2).mean()))
    expected = 1.0
    for i in range(6):
        for j in range(6):
            if GOLD[i] > GOLD[j]:
                expected += math.exp(20 * (COS[j] - COS[i]).item())
    assert cosent_term(COS, GOLD).item() == pytest.approx(math.log(expected))


@pytest.mark.parametrize(
    "loss",
    [
        lambda c: source_pearson_loss(c, GOLD, SOURCE),
        lambda c: mse_term(c, GOLD, 5.0),
        lambda c: cosent_term(c, GOLD),
        lambda c: soft_rank(c, 0.3),
    ],
    ids=["source-pearson", "mse", "cosent", "soft-rank"],
)
def test_gradients_match_finite_differences(loss):
    cos = COS.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(loss, (cos,))


def test_isotonic_regression_equals_scikit_learn():
    rng = np.random.default_rng(0)
    y = rng.normal(size=40)
    ours, blocks = isotonic_decreasing(y)
    theirs = IsotonicRegression(increasing=False).fit_transform(np.arange(40), y)
    np.testing.assert_allclose(ours, theirs, atol=1e-12)
    assert blocks[0][0] == 0 and blocks[-1][1] == 40


def test_soft_spearman_tends_to_one_minus_spearman():
    from pcctune.losses.pearson import pearson_r

    rng = np.random.default_rng(1)
    cos = torch.tensor(rng.normal(size=50))
    gold = torch.tensor(rng.integers(0, 6, size=50), dtype=torch.float64)  # ties, as real gold scores have
    spearman = spearmanr(cos.numpy(), gold.numpy()).statistic

    def loss(eps: float) -> float:
        return (1 - pearson_r(soft_rank(cos, eps), hard_rank(gold))).item()

    gaps = [abs(loss(eps) - (1 - spearman)) for eps in (1e-2, 1e-3, 1e-4)]
    assert gaps[0] > 1e-4 and gaps[0] >= gaps[1] >= gaps[2] and gaps[2] < 1e-9  # → 1 − Spearman as ε → 0
    # large ε: soft ranks are affine in the values, so the loss is 1 − Pearson(cos, rank(gold)) …
    assert loss(10.0) == pytest.approx(1 - pearsonr(cos.numpy(), hard_rank(gold).numpy()).statistic, abs=1e-9)
    # … and the ranks all tend to the mean rank
    assert torch.allclose(soft_rank(cos, 1e6), torch.full((50,), 25.5, dtype=torch.float64), atol=1e-3)


def test_the_default_soft_spearman_is_not_pearson_of_ranks_on_a_realistic_batch(tiny_bert):
    """Cosines of a real batch span about 0.5: a fixed ε = 0.1 on raw cosines pooled everything (the loss was
    1 − Pearson(cos, rank(gold)) exactly); the batch-scaled ε of the loss keeps it near 1 − Spearman."""
    from pcctune.losses.pearson import pearson_r
    from pcctune.losses.soft_spearman import SoftSpearmanLoss, batch_scaled

    rng = np.random.default_rng(0)
    gold = torch.tensor(rng.uniform(0, 5, 64))
    cos = 0.5 + 0.05 * (gold - 2.5) + torch.tensor(rng.normal(0, 0.12, 64))
    pearson_of_ranks = 1 - pearsonr(cos.numpy(), hard_rank(gold).numpy()).statistic
    spearman = 1 - spearmanr(cos.numpy(), gold.numpy()).statistic
    old = (1 - pearson_r(soft_rank(cos, 0.1), hard_rank(gold))).item()
    assert old == pytest.approx(pearson_of_ranks, abs=1e-12)  # the collapse
    eps = SoftSpearmanLoss(SentenceTransformer(str(tiny_bert)))
    new = (1 - pearson_r(soft_rank(batch_scaled(cos, eps.regularization)), hard_rank(gold))).item()
    assert abs(new - pearson_of_ranks) > 5 * abs(new - spearman)
    assert abs(new - spearman) < 5e-3
    cos.requires_grad_(True)
    pearson_r(soft_rank(batch_scaled(cos, eps.regularization)), hard_rank(gold)).backward()
    assert cos.grad.abs().sum() > 0  # pooled blocks still carry a gradient


def test_source_batches_are_single_source_and_cover_each_pair_once():
    dataset = {"score": [[float(i % 5), float(i % 3 == 0)] for i in range(40)]}
    sampler = SourceBatchSampler(dataset, batch_size=4, drop_last=True, seed=3)
    batches = list(sampler)
    assert all(len({dataset["score"][i][1] for i in batch}) == 1 for batch in batches)
    flat = [i for batch in batches for i in batch]
    assert len(flat) == len(set(flat)) and all(len(b) == 4 for b in batches) and len(sampler) == len(batches)
    sampler.set_epoch(1)
    assert list(sampler) != batches  # reshuffled every epoch, reproducibly
    sampler.set_epoch(0)
    assert list(sampler) == batches


@pytest.mark.parametrize(
    "stage",
    [
        {"loss": "pearson_by_source"},
        {"loss": "pearson", "group_by_source": True},
        {"loss": "pearson_mse"},
        {"loss": "pearson_cosent"},
        {"loss": "soft_spearman"},
    ],
)
def test_each_new_loss_trains_a_stage(tiny_bert, shared_senteval, tmp_path, stage):
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    pairs_jsonl(tmp_path / "p.jsonl", 16)
    config = RunConfig.model_validate(
        {
            "model": str(tiny_bert),
            "data_dir": str(shared_senteval),
            "output_dir": str(tmp_path / "run"),
            "evaluate_before": False,
            "stages": [
                {
                    "name": "s",
                    "data": {"source": "stage2"},
                    "batch_size": 2,
                    "max_steps": 2,
                    "dev": "none",
                    "learning_rate": 1e-3,
                    **stage,
                }
            ],
        }
    )
    record = run_pipeline(config)
    assert record.stages[0].loss == stage["loss"] and "avg" in record.sts_by_stage["s"]


def test_group_by_source_needs_a_pearson_loss():
    from pydantic import ValidationError

    from pcctune.training.config import StageConfig

    with pytest.raises(ValidationError, match="group_by_source works with the pearson"):
        StageConfig.model_validate(
            {"name": "s", "loss": "cosent", "data": {"source": "stage2"}, "group_by_source": True}
        )
