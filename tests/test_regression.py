"""Regression framework: penalties against hand-computed values, the zero-gradient zone, the head."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pcctune.data.nli import read_snli_regression_pairs
from pcctune.losses.regression import (
    RegressionLoss,
    clip_straight_through,
    pair_features,
    penalty,
    smooth_k2,
    translated_relu,
)
from pcctune.modeling.build import build_model
from pcctune.testing import write_lines
from pcctune.training.head_warmup import warm_up_head
from tests.conftest import SENTENCES


def test_translated_relu_by_hand():
    x = torch.tensor([0.0, 0.2, 0.25, 0.5, 1.25])
    assert translated_relu(x, k=2.0, x0=0.25).tolist() == pytest.approx([0, 0, 0, 0.5, 2.0])


def test_smooth_k2_by_hand_and_its_derivative():
    x = torch.tensor([0.1, 0.25, 0.75, 1.25], requires_grad=True)
    y = smooth_k2(x, k=2.0, x0=0.25)
    assert y.tolist() == pytest.approx([0, 0, 0.5, 2.0])  # k(x − x0)²
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([0, 0, 2.0, 4.0])  # 2k(x − x0)


@pytest.mark.parametrize("name", ["translated_relu", "smooth_k2"])
def test_zero_gradient_zone(name):
    x = torch.tensor([0.0, 0.1, 0.24], requires_grad=True)
    penalty(name, x, 3.0, 0.25).sum().backward()
    assert torch.all(x.grad == 0)


def test_l1_and_mse():
    x = torch.tensor([0.5, 2.0])
    assert penalty("l1", x, 2, 0.25).tolist() == [0.5, 2.0]
    assert penalty("mse", x, 2, 0.25).tolist() == [0.25, 4.0]


def test_clipping_keeps_a_gradient():
    prediction = torch.tensor([7.0, 2.0, -1.0], requires_grad=True)
    clipped = clip_straight_through(prediction, 0.0, 5.0)
    assert clipped.tolist() == [5.0, 2.0, 0.0]
    (clipped - torch.tensor([0.0, 0.0, 3.0])).abs().sum().backward()
    assert prediction.grad.tolist() == [1.0, 1.0, -1.0]  # torch.clamp would give 0 outside the range


def test_pair_features():
    u, v = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 1.0]])
    assert pair_features(u, v, "uv_absdiff").tolist() == [[1, 2, 3, 1, 2, 1]]
    assert pair_features(u, v, "uv").tolist() == [[1, 2, 3, 1]]
    assert pair_features(u, v, "absdiff").tolist() == [[2, 1]]


def test_regression_loss_equals_head_by_hand(tiny_bert):
    model = build_model(str(tiny_bert), device="cpu")
    loss = RegressionLoss(model, 32, "smooth_k2", k=2.0, x0=0.25, concat="absdiff")
    features = [model.preprocess(SENTENCES[:3]), model.preprocess(SENTENCES[3:6])]
    labels = torch.tensor([0.0, 2.5, 5.0])
    value = loss(features, labels)
    u, v = (model(f)["sentence_embedding"] for f in features)
    prediction = (u - v).abs() @ loss.head.weight.T + loss.head.bias
    expected = (2.0 * torch.clamp((prediction.squeeze(-1) - labels).abs() - 0.25, min=0) ** 2).mean()
    assert value.item() == pytest.approx(expected.item(), rel=1e-5)
    value.backward()
    assert loss.head.weight.grad is not None and any(p.grad is not None for p in model.parameters())


def test_snli_as_regression_and_head_warmup(tiny_bert, tmp_path):
    write_lines(tmp_path / "s1.dev", SENTENCES[:6])
    write_lines(tmp_path / "s2.dev", SENTENCES[6:])
    write_lines(tmp_path / "labels.dev", ["entailment", "neutral", "contradiction", "-", "entailment", "neutral"])
    pairs = read_snli_regression_pairs(tmp_path, ("dev",))
    assert [p.score for p in pairs] == [2.0, 1.0, 0.0, 2.0, 1.0]  # "-" has no gold label
    model = build_model(str(tiny_bert))
    loss = RegressionLoss(model, 32, "mse")
    encoder_before = [p.detach().clone() for p in model.parameters()]
    first = warm_up_head(loss, pairs, epochs=1, lr=0.05, batch_size=2)
    last = warm_up_head(loss, pairs, epochs=30, lr=0.05, batch_size=2)
    assert last < first
    assert all(torch.equal(a, b) for a, b in zip(encoder_before, model.parameters(), strict=False))  # encoder frozen


def _normalized_tiny_bert(tiny_bert, folder):
    """The tiny BERT as all-MiniLM-L6-v2 is built: Transformer, Pooling, Normalize."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.normalize import Normalize

    base = build_model(str(tiny_bert))
    SentenceTransformer(modules=[*base, Normalize()]).save(str(folder))
    return folder


def test_pooled_embeddings_pass_normalize_through_and_keep_the_saved_model(tiny_bert, tmp_path):
    from pcctune.training.pooled import pooled_embeddings

    model = build_model(str(_normalized_tiny_bert(tiny_bert, tmp_path / "normalized")), device="cpu")
    features = model.preprocess(SENTENCES[:4])
    with torch.no_grad():
        with pooled_embeddings(model):
            pooled = model(dict(features))["sentence_embedding"]
            model.save(str(tmp_path / "saved_inside"))
        after = model(dict(features))["sentence_embedding"]
    assert not torch.allclose(pooled.norm(dim=-1), torch.ones(4), atol=1e-3)  # the pooled, unnormalised vectors
    assert torch.allclose(after.norm(dim=-1), torch.ones(4), atol=1e-5)  # normalised again after the block
    assert torch.allclose(torch.nn.functional.normalize(pooled, dim=-1), after, atol=1e-6)
    again = build_model(str(tmp_path / "saved_inside"))  # a save inside the block keeps its Normalize
    assert type(again[-1]).__name__ == "Normalize"


def test_a_regression_stage_trains_its_head_on_the_pooled_embeddings(tiny_bert, shared_senteval, tmp_path):
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig
    from tests.conftest import pairs_jsonl

    model = _normalized_tiny_bert(tiny_bert, tmp_path / "normalized")
    norms: list[torch.Tensor] = []
    real = RegressionLoss.loss_from_embeddings

    def spy(self, columns, labels):
        norms.append(torch.cat([c.detach().norm(dim=-1) for c in columns]))
        return real(self, columns, labels)

    data = {"source": "pairs", "path": str(pairs_jsonl(tmp_path / "p.jsonl", 16))}
    stage = {"name": "r", "loss": "smooth_k2", "data": data, "batch_size": 4, "max_steps": 2, "dev": "none"}
    config = RunConfig.model_validate(
        {"model": str(model), "data_dir": str(shared_senteval), "output_dir": str(tmp_path / "run")}
        | {"evaluate_before": False, "stages": [stage]}
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RegressionLoss, "loss_from_embeddings", spy)
        run_pipeline(config, tasks=[])
    assert norms and not torch.allclose(torch.cat(norms), torch.ones(1), atol=1e-3)
    final = build_model(str(tmp_path / "run" / "stage1-r" / "final"))
    assert torch.allclose(torch.as_tensor(final.encode(SENTENCES[:3])).norm(dim=-1), torch.ones(3), atol=1e-5)


def test_a_resumed_regression_stage_continues_the_head_it_trained(tiny_bert, shared_senteval, tmp_path, monkeypatch):
    """The head lives in the loss, which the trainer's checkpoints do not hold: each checkpoint keeps it, and a
    stage cut after step 2 and resumed ends with the uninterrupted stage's weights."""
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.callbacks import LOSS_PARAMETERS
    from pcctune.training.config import RunConfig
    from tests.conftest import pairs_jsonl

    pairs = pairs_jsonl(tmp_path / "pairs.jsonl", 48)

    def config(out):
        stage = {"name": "r", "loss": "regression_mse", "data": {"source": "pairs", "path": str(pairs)}}
        stage |= {"batch_size": 8, "max_steps": 4, "eval_steps": 2, "dev": "none", "learning_rate": 0.01}
        run = {"model": str(tiny_bert), "data_dir": str(shared_senteval), "output_dir": str(tmp_path / out)}
        return RunConfig.model_validate(run | {"tasks": "none", "evaluate_before": False, "stages": [stage]})

    class CutAfterStep2(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise KeyboardInterrupt

    def weights(out):
        return load_file(next((tmp_path / out / "stage1-r" / "final").rglob("model.safetensors")))

    from transformers import TrainerState

    from pcctune.training.stage_cost import COST_FILE

    save_state, there_before = TrainerState.save_to_json, []

    def watched(self, json_path):  # a checkpoint is complete once its trainer state is: every file before it
        folder = Path(json_path).parent
        there_before.append(all((folder / name).is_file() for name in (LOSS_PARAMETERS, COST_FILE)))
        save_state(self, json_path)

    monkeypatch.setattr(TrainerState, "save_to_json", watched)
    run_pipeline(config("whole"))
    assert there_before and all(there_before)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(config("cut"), callbacks=[CutAfterStep2()])
    checkpoint = tmp_path / "cut" / "stage1-r" / "checkpoints" / "checkpoint-2"
    assert (checkpoint / LOSS_PARAMETERS).is_file()
    run_pipeline(config("cut"), resume=True)
    whole, resumed = weights("whole"), weights("cut")
    assert all(torch.equal(whole[key], resumed[key]) for key in whole)
