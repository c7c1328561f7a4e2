"""DCPCSE continuous prompts: frozen backbone, prompts change the output, save/load, masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import batch_to_device

from pcctune.modeling.build import build_model
from pcctune.modeling.prefix import PROMPTS_FILE
from tests.conftest import SENTENCES, pairs_jsonl

DEEP = {"prompt_kind": "deep", "prompt_length": 4}
SHALLOW = {"prompt_kind": "shallow", "prompt_length": 3, "prompt_init_text": "this sentence means"}


def _train_step(model):
    features = batch_to_device(model.preprocess(SENTENCES[:4]), model.device)
    model(features)["sentence_embedding"].pow(2).sum().backward()


@pytest.fixture(params=["tiny_bert", "tiny_mpnet"])
def encoder(request) -> str:
    """BERT reads peft's prefix cache; MPNet gets the prefix through pcctune's own attention."""
    return str(request.getfixturevalue(request.param))


@pytest.mark.parametrize("prompt", [DEEP, SHALLOW, {**DEEP, "prompt_projection": True}])
def test_only_the_prompts_get_gradients(encoder, prompt):
    model = build_model(encoder, prompt=prompt)
    _train_step(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("prompt" in n for n in trainable)
    for name, parameter in model.named_parameters():
        if name in trainable:
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
        else:
            assert parameter.grad is None, name


@pytest.mark.parametrize("prompt", [DEEP, SHALLOW])
def test_prompts_change_the_output(encoder, prompt):
    plain = build_model(encoder).encode(SENTENCES[:2])
    prompted = build_model(encoder, prompt=prompt).encode(SENTENCES[:2])
    assert prompted.shape == plain.shape and not np.allclose(prompted, plain, atol=1e-4)


@pytest.mark.parametrize("prompt", [DEEP, SHALLOW])
def test_save_load_round_trip_keeps_the_prompts(encoder, tmp_path, prompt):
    model = build_model(encoder, prompt=prompt)
    with torch.no_grad():  # move the prompts away from their initial values, as training would
        for _name, parameter in model.named_parameters():
            if parameter.requires_grad:
                parameter.add_(torch.randn_like(parameter) * 0.5)
    before = model.encode(SENTENCES[:3])
    model.save(str(tmp_path / "saved"))
    assert (tmp_path / "saved" / PROMPTS_FILE).is_file()
    assert not (tmp_path / "saved" / "adapter_config.json").exists()  # nothing for a LoRA-only loader to misread
    loaded = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True)
    np.testing.assert_allclose(loaded.encode(SENTENCES[:3]), before, atol=1e-6)
    np.testing.assert_allclose(build_model(str(tmp_path / "saved")).encode(SENTENCES[:3]), before, atol=1e-6)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
@pytest.mark.parametrize("prompt", [DEEP, {**DEEP, "offset_positions": False}, SHALLOW])
def test_padding_does_not_change_embeddings(encoder, prompt, pooling):
    model = build_model(encoder, prompt=prompt, pooling=pooling)
    sentences = ["a man", "two kids are eating food in the park outside", "a dog runs"]
    batch = model.encode(sentences, convert_to_tensor=True)
    single = torch.stack([model.encode([s], convert_to_tensor=True)[0] for s in sentences])
    assert torch.allclose(batch, single, atol=1e-5)


def test_a_masked_out_mpnet_prefix_leaves_every_layer_as_plain_mpnet(tiny_mpnet):
    """Prefix columns line up with the widened mask and the padded position bias: masked, they change nothing."""
    from transformers import MPNetModel

    model = build_model(str(tiny_mpnet), prompt=DEEP, device="cpu")  # beside a plain MPNet on the CPU
    prompted = model[0]
    features = model.preprocess(SENTENCES[:3])
    mask = features["attention_mask"]
    with torch.no_grad():
        plain = MPNetModel.from_pretrained(str(tiny_mpnet))(input_ids=features["input_ids"], attention_mask=mask)
        from pcctune.modeling.prefix_mpnet import prefixes_set

        with prefixes_set(prompted.prefixed_layers, prompted.model.get_prompt(batch_size=3)):
            hidden = prompted.model.get_base_model()(
                input_ids=features["input_ids"], attention_mask=torch.cat([torch.zeros(3, 4).long(), mask], dim=1)
            )
    assert torch.allclose(hidden.last_hidden_state, plain.last_hidden_state, atol=1e-5)
    assert all(layer.prefix is None for layer in prompted.prefixed_layers)  # cleared after the call


def test_deep_prompts_on_an_attention_without_a_prefix_cache_fail_in_one_line(tmp_path):
    from transformers import DistilBertConfig, DistilBertModel

    from pcctune.errors import PcctuneError
    from pcctune.testing import word_level_tokenizer

    tokenizer = word_level_tokenizer("bert")
    config = DistilBertConfig(vocab_size=len(tokenizer), dim=32, n_layers=1, n_heads=2, hidden_dim=64)
    DistilBertModel(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    with pytest.raises(PcctuneError, match="distilbert's does not: use shallow prompts or LoRA"):
        build_model(str(tmp_path), prompt=DEEP)


def test_position_offset_option(tiny_bert):
    offset = build_model(str(tiny_bert), prompt=DEEP)
    plain = build_model(str(tiny_bert), prompt={**DEEP, "offset_positions": False})
    plain[0].model.load_state_dict(offset[0].model.state_dict())
    assert not np.allclose(offset.encode(["a man plays guitar"]), plain.encode(["a man plays guitar"]))


def test_mlm_weight_schedule():
    from pcctune.losses.mlm import mlm_weight

    assert mlm_weight(0) == pytest.approx(0.1)
    assert mlm_weight(100) == pytest.approx(0.095)
    assert mlm_weight(1000) == pytest.approx(0.1 * 0.95**10)


def test_auxiliary_mlm_adds_the_decayed_term_and_trains_the_prompts(tiny_bert):
    from pcctune.errors import PcctuneError
    from pcctune.losses import PearsonLoss
    from pcctune.losses.mlm import AuxiliaryMLMLoss, load_mlm_head

    with pytest.raises(PcctuneError, match="no MLM head weights"):
        load_mlm_head(str(tiny_bert))  # the tiny BERT is saved without one
    model = build_model(str(tiny_bert), prompt=DEEP, device="cpu")  # the head and labels are built on the CPU
    head = load_mlm_head(str(tiny_bert), train_head=True)
    main = PearsonLoss(model)
    loss = AuxiliaryMLMLoss(main, model, head, decay_steps=1)
    features = [model.preprocess(SENTENCES[:6]), model.preprocess(SENTENCES[6:12])]
    labels = torch.tensor([0.0, 1, 2, 3, 4, 5])
    torch.manual_seed(0)
    total = loss(features, labels)
    torch.manual_seed(0)
    mlm_part = loss.mlm_loss(features[0])
    assert total.item() == pytest.approx(main(features, labels).item() + 0.1 * mlm_part.item(), rel=1e-5)
    assert loss.step == 1
    total.backward()
    prompt_grads = [p.grad for n, p in model.named_parameters() if p.requires_grad]
    assert prompt_grads and all(g is not None for g in prompt_grads)
    with torch.no_grad():
        assert loss(features, labels).item() == pytest.approx(main(features, labels).item())  # eval: main only


@pytest.mark.parametrize("pooling", ["mean", "lasttoken"])
def test_deep_prompts_left_and_right_padding_agree(tiny_bert, pooling):
    """With positions from the mask (offset_positions=False) the prefix mask is right for both padding sides."""
    from tests.conftest import encode_both_padding_sides

    model = build_model(str(tiny_bert), prompt={**DEEP, "offset_positions": False}, pooling=pooling)
    right, left = encode_both_padding_sides(model, ["a man", "two kids are eating food in the park outside", "a dog"])
    assert torch.allclose(left, right, atol=1e-5)


@pytest.mark.parametrize("prompt", [DEEP, SHALLOW])
def test_prompts_leave_room_in_the_position_table(tiny_bert, prompt):
    """Offset deep prompts and shallow prompts add P positions: a full-length input must still fit."""
    model = build_model(str(tiny_bert), prompt=prompt)
    assert model.max_seq_length == model[0].model.config.max_position_embeddings - prompt["prompt_length"]
    assert model.encode(["the man plays guitar in the park " * 20]).shape == (1, 32)


def test_mlm_weight_continues_across_resume(tiny_bert, shared_senteval, tmp_path, monkeypatch):
    """λ = 0.1 · 0.95^(step/100) reads the trainer's step: resumed from checkpoint-2, the run uses λ(2), λ(3)."""

    from transformers import TrainerCallback

    import pcctune.losses.mlm as mlm
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    class KillAt(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:  # after checkpoint-2 was saved
                raise KeyboardInterrupt

    steps: list[int] = []
    real_weight = mlm.mlm_weight
    monkeypatch.setattr(mlm, "mlm_weight", lambda step, *a: steps.append(step) or real_weight(step, *a))
    pairs_jsonl(tmp_path / "p.jsonl", 32)
    config = RunConfig.model_validate(
        {
            "model": str(tiny_bert),
            "data_dir": str(shared_senteval),
            "output_dir": str(tmp_path / "run"),
            "evaluate_before": False,
            "evaluate_after_each_stage": False,
            "adapter": {"kind": "deep_prompt", "prompt_length": 2},
            "stages": [
                {
                    "name": "s",
                    "loss": "pearson",
                    "data": {"source": "pairs", "path": str(tmp_path / "p.jsonl")},
                    "batch_size": 4,
                    "max_steps": 4,
                    "eval_steps": 2,
                    "dev": "none",
                    "mlm": {"enabled": True, "train_head": True},
                }
            ],
        }
    )
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(config, callbacks=[KillAt()])
    assert steps == [0, 1, 2]
    steps.clear()
    run_pipeline(config, resume=True)
    assert steps == [2, 3]


def test_head_warm_up_runs_on_the_embeddings_device(tiny_bert, monkeypatch):
    """On a GPU the head is built on the CPU while embeddings come back on CUDA: warm-up moves the head to them."""
    from pcctune.data.sts import STSPair
    from pcctune.losses.regression import RegressionLoss
    from pcctune.training.head_warmup import warm_up_head

    model = build_model(str(tiny_bert))
    loss = RegressionLoss(model, model.get_embedding_dimension(), "smooth_k2")
    moved_to: list[torch.device] = []
    real_to = loss.head.to

    def recording_to(*args, **kwargs):
        moved_to.append(torch.device(args[0]))
        return real_to(*args, **kwargs)

    monkeypatch.setattr(loss.head, "to", recording_to)
    pairs = [STSPair(SENTENCES[i], SENTENCES[(i + 1) % 12], float(i % 3)) for i in range(8)]
    warm_up_head(loss, pairs, batch_size=4)
    embeddings_device = model.encode(SENTENCES[:1], convert_to_tensor=True).device
    assert moved_to == [embeddings_device]
    prediction = loss.predict(
        torch.zeros(2, model.get_embedding_dimension()), torch.ones(2, model.get_embedding_dimension())
    )
    assert prediction.device == loss.head.weight.device


@pytest.mark.parametrize("config_file", ["dcpcse_minilm.yaml", "dcpcse_mpnet.yaml"])
def test_dcpcse_as_published_trains_prompts_and_the_mlp_head_only(
    config_file, tiny_bert, shared_senteval, tmp_path, monkeypatch
):
    """The published configs, run unchanged but for the model, the data files and a tiny budget."""
    import csv
    from pathlib import Path

    from sentence_transformers.models import Dense

    from pcctune.orchestration import pipeline
    from pcctune.training.config import load_config

    initial = []
    real_head = pipeline.add_mlp_head
    monkeypatch.setattr(
        pipeline, "add_mlp_head", lambda m: real_head(m) and (initial.append(m[-1].linear.weight.clone()) or m)
    )

    with (tmp_path / "nli.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sent0", "sent1", "hard_neg"])
        # every text distinct: the in-batch-negative sampler drops a batch with a repeated sentence
        writer.writerows(
            [f"{SENTENCES[i]} {i}", f"{SENTENCES[(i + 1) % 12]} {i}", f"{SENTENCES[(i + 6) % 12]} {i}"]
            for i in range(12)
        )
    overrides = {"model": str(tiny_bert), "data_dir": str(shared_senteval), "output_dir": str(tmp_path / "run")}
    overrides |= {"stages.0.data.path": str(tmp_path / "nli.csv"), "stages.0.batch_size": 4, "stages.0.max_steps": 3}
    overrides |= {"stages.0.eval_steps": 1, "stages.0.dev": "none", "evaluate_before": False}  # the last step kept
    config = load_config(Path("configs") / config_file, overrides)
    assert config.pooling == "cls" and config.pooling_head == "mlp" and config.adapter.kind == "deep_prompt"
    base = build_model(str(tiny_bert))
    result = pipeline.run_pipeline(config)
    trained = build_model(str(tmp_path / "run" / "stage1-dcpcse" / "final"))
    assert isinstance(trained[-1], Dense) and "avg" in result.sts_by_stage["dcpcse"]
    backbone = dict(trained[0].model.get_base_model().named_parameters())  # the encoder under the prompts
    assert backbone.keys() == dict(base[0].model.named_parameters()).keys()
    assert all(torch.equal(p, backbone[n]) for n, p in base[0].model.named_parameters())
    assert len(initial) == 1 and not torch.allclose(trained[-1].linear.weight, initial[0])  # the head trained


def test_a_stage_whose_data_gives_no_batch_of_distinct_sentences_stops_with_one_line(
    tiny_bert, shared_senteval, tmp_path
):
    import csv

    from pcctune.errors import PcctuneError
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    with (tmp_path / "nli.csv").open("w", newline="") as handle:  # each sentence in three triplets
        writer = csv.writer(handle)
        writer.writerow(["sent0", "sent1", "hard_neg"])
        writer.writerows([SENTENCES[i], SENTENCES[(i + 1) % 12], SENTENCES[(i + 6) % 12]] for i in range(12))
    stage = {"name": "s", "loss": "infonce", "data": {"source": "simcse_csv", "path": str(tmp_path / "nli.csv")}}
    stage |= {"batch_size": 8, "max_steps": 2, "eval_steps": 1, "dev": "none"}
    config = RunConfig.model_validate(
        {"model": str(tiny_bert), "data_dir": str(shared_senteval), "output_dir": str(tmp_path / "run")}
        | {"evaluate_before": False, "stages": [stage]}
    )
    with pytest.raises(
        PcctuneError, match="stage 's' trained no step: 12 examples gave no full batch of 8 of distinct"
    ):
        run_pipeline(config)


@pytest.mark.parametrize("kind", ["deep_prompt", "shallow_prompt"])
def test_a_saved_prompt_module_missing_a_setting_loads_with_the_configs_default(kind):
    """``PromptedTransformer`` fills a setting a saved folder lacks with its own default; a run's config fills it with
    ``AdapterConfig``'s. Both must be the same value, or one model would load two ways."""
    import inspect

    from pcctune.modeling.adapters import AdapterConfig
    from pcctune.modeling.prefix import PromptedTransformer

    settings = AdapterConfig(kind=kind).prompt_kwargs()
    assert settings is not None
    defaults = inspect.signature(PromptedTransformer.__init__).parameters
    assert {name: defaults[name].default for name in settings if name != "prompt_kind"} == {
        name: value for name, value in settings.items() if name != "prompt_kind"
    }
