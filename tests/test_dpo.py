"""Embedding DPO: the loss by hand (sign, β), the frozen reference, preference sampling, a DPO stage."""

from __future__ import annotations

import math

import pytest
import torch

from pcctune.losses.dpo import EmbeddingDPOLoss, dpo_loss, positive_similarity
from pcctune.modeling.build import build_model
from pcctune.training.preference import sample_preferences
from tests.conftest import SENTENCES, one_step_stage2


def test_loss_is_log2_when_policy_equals_reference():
    s = (torch.tensor([0.8, 0.6]), torch.tensor([0.3, 0.5]))
    assert dpo_loss(s, s, beta=0.5).item() == pytest.approx(math.log(2))


def test_sign_and_beta_by_hand():
    reference = (torch.tensor([0.5]), torch.tensor([0.5]))
    better = (torch.tensor([0.8]), torch.tensor([0.4]))  # preferred pair closer, rejected further
    worse = (torch.tensor([0.4]), torch.tensor([0.8]))
    for beta in (0.1, 1.0, 5.0):
        margin = beta * ((math.log(0.8) - math.log(0.5)) - (math.log(0.4) - math.log(0.5)))
        assert dpo_loss(better, reference, beta).item() == pytest.approx(-math.log(1 / (1 + math.exp(-margin))))
        assert dpo_loss(better, reference, beta).item() < math.log(2) < dpo_loss(worse, reference, beta).item()
    # a larger β punishes the same wrong ordering harder
    assert dpo_loss(worse, reference, 5.0).item() > dpo_loss(worse, reference, 0.1).item()


def test_similarity_is_mapped_to_a_positive_range():
    a = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    b = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    assert positive_similarity(a, b).tolist() == pytest.approx([1.0, 0.5, 1e-4])


def test_reference_is_frozen_and_not_trained(tiny_bert):
    model = build_model(str(tiny_bert), device="cpu")
    loss = EmbeddingDPOLoss(model, beta=1.0)
    assert not any(p is q for p in loss.parameters() for q in loss.reference.parameters())
    assert all(not p.requires_grad for p in loss.reference.parameters())
    before = [p.detach().clone() for p in loss.reference.parameters()]
    features = [model.preprocess(SENTENCES[i : i + 3]) for i in (0, 3, 6, 9)]
    value = loss(features)
    assert value.item() == pytest.approx(math.log(2), abs=1e-5)  # policy starts equal to the reference
    value.backward()
    torch.optim.SGD(loss.parameters(), lr=1.0).step()
    assert all(p.grad is None for p in loss.reference.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, loss.reference.parameters(), strict=False))
    assert loss(features).item() != pytest.approx(math.log(2), abs=1e-5)  # the policy moved


class FakeScorer:
    def predict(self, pairs, **kwargs):
        return [len(a) - len(b) for a, b in pairs]


def test_preference_sampling_respects_ranking_and_margin():
    candidates = [("aaaa", "a"), ("aaaa", "aaa"), ("bb", "b"), ("bbbbbb", "b")]
    preferences = sample_preferences(FakeScorer(), candidates, count=20, margin=1.5, mode="random", seed=0)
    assert len(preferences) == 20
    for p in preferences:
        assert (len(p.x1) - len(p.x2)) - (len(p.x3) - len(p.x4)) >= 1.5
    anchored = sample_preferences(FakeScorer(), candidates, count=5, margin=0.5, mode="anchor", seed=0)
    assert len(anchored) == 5 and all(p.x1 == p.x3 == "aaaa" for p in anchored)


def test_dpo_as_a_pipeline_stage(tiny_bert, mini_senteval, tmp_path):
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    config = RunConfig.model_validate(
        {
            "model": str(tiny_bert),
            "data_dir": str(mini_senteval),
            "output_dir": str(tmp_path / "run"),
            "evaluate_before": False,
            "stages": [
                one_step_stage2(),
                {
                    "name": "dpo",
                    "loss": "dpo",
                    "data": {"source": "stage2"},
                    "batch_size": 4,
                    "max_steps": 2,
                    "dev": "sick-trial",
                    "eval_steps": 1,
                    "dpo": {"beta": 0.5, "preference_base": str(tiny_bert), "count": 8, "margin": 0.0},
                },
            ],
        }
    )
    record = run_pipeline(config)
    assert set(record.sts_by_stage) == {"pcc", "dpo"}
    assert (tmp_path / "run" / "stage2-dpo" / "preference_model" / "final").is_dir()
    assert record.stages[1].train_examples == 8


def test_a_dpo_stage_that_selects_on_the_held_out_share_never_draws_on_it(shared_senteval, tmp_path, monkeypatch):
    """Neither the cross-encoder's scored pairs nor the preference candidates hold a held-out pair."""
    from pcctune.data.dev import in_holdout
    from pcctune.data.sts import STSPair
    from pcctune.training import preference
    from pcctune.training.config import StageConfig
    from pcctune.training.datasets import train_dataset
    from tests.conftest import pairs_jsonl

    drawn: dict[str, list] = {}

    def capture(dpo, scored, candidates, folder, seed):
        drawn["scored"], drawn["candidates"] = list(scored), list(candidates)
        return [None] * 8

    monkeypatch.setattr(preference, "dpo_dataset", capture)
    pairs = pairs_jsonl(tmp_path / "pairs.jsonl", count=200, distinct=True)
    stage = StageConfig.model_validate(
        {"name": "dpo", "loss": "dpo", "data": {"source": "pairs", "path": str(pairs)}, "batch_size": 4}
        | {"dev": "holdout", "dpo": {"candidates": "stage2", "count": 8}}
    )
    train_dataset(stage, shared_senteval, tmp_path / "stage", holdout=True)
    assert len(drawn["scored"]) > 100 and drawn["candidates"]
    assert not any(in_holdout(pair) for pair in drawn["scored"])
    assert not any(in_holdout(STSPair(a, b, 0.0)) for a, b in drawn["candidates"])
    train_dataset(stage, shared_senteval, tmp_path / "stage", holdout=False)
    assert any(in_holdout(pair) for pair in drawn["scored"])  # the share exists: the check above could fail
