"""DCPCSE continuous prompts: frozen backbone, prompts change the output, save/load, masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from pcctune.modeling.build import build_model
from pcctune.modeling.prefix import PROMPTS_FILE
from tests.conftest import SENTENCES

DEEP = {"prompt_kind": "deep", "prompt_length": 4}
SHALLOW = {"prompt_kind": "shallow", "prompt_length": 3, "prompt_init_text": "this sentence means"}


def _train_step(model):
    features = model.preprocess(SENTENCES[:4])
    model(features)["sentence_embedding"].pow(2).sum().backward()


@pytest.mark.parametrize("prompt", [DEEP, SHALLOW, {**DEEP, "prompt_projection": True}])
def test_only_the_prompts_get_gradients(tiny_bert, prompt):
    model = build_model(str(tiny_bert), prompt=prompt)
    _train_step(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("prompt" in n for n in trainable)
    for name, parameter in model.named_parameters():
        if name in trainable:
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
        else:
            assert parameter.grad is None, name


@pytest.mark.parametrize("prompt", [DEEP, SHALLOW])
def test_prompts_change_the_output(tiny_bert, prompt):
    plain = build_model(str(tiny_bert)).encode(SENTENCES[:2])
    prompted = build_model(str(tiny_bert), prompt=prompt).encode(SENTENCES[:2])
    assert prompted.shape == plain.shape and not np.allclose(prompted, plain, atol=1e-4)


@pytest.mark.parametrize("prompt", [DEEP, SHALLOW])
def test_save_load_round_trip_keeps_the_prompts(tiny_bert, tmp_path, prompt):
    model = build_model(str(tiny_bert), prompt=prompt)
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
def test_padding_does_not_change_embeddings(tiny_bert, prompt, pooling):
    model = build_model(str(tiny_bert), prompt=prompt, pooling=pooling)
    sentences = ["a man", "two kids are eating food in the park outside", "a dog runs"]
    batch = model.encode(sentences, convert_to_tensor=True)
    single = torch.stack([model.encode([s], convert_to_tensor=True)[0] for s in sentences])
    assert torch.allclose(batch, single, atol=1e-5)


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
    model = build_model(str(tiny_bert), prompt=DEEP)
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
