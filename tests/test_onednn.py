"""oneDNN's linear kernel for inference: the same embeddings, the kernel really used, everything restored after."""

from __future__ import annotations

import copy
from unittest import mock

import numpy as np
import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

import pcctune
from pcctune.modeling import onednn as onednn_module
from pcctune.modeling.build import build_model
from pcctune.modeling.encoding import encode_texts
from pcctune.modeling.onednn import onednn_linears, routable
from tests.conftest import SENTENCES, pairs_jsonl, tiny_run

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")


def _ops_run(model, features) -> set[str]:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(features)
    return {event.key for event in prof.key_averages()}


@pytest.mark.parametrize(("fixture", "template"), [("tiny_bert", None), ("tiny_llama", "eol")])
def test_encoding_through_onednn_gives_the_mkl_embeddings(fixture, template, request):
    model = build_model(str(request.getfixturevalue(fixture)), template=template)
    texts = [*SENTENCES, "a"]
    routed = encode_texts(model, texts, onednn=True)
    plain = encode_texts(model, texts, onednn=False)
    np.testing.assert_allclose(routed, plain, atol=1e-5)


def test_the_linear_layers_run_oneDNNs_kernel_inside_and_their_own_after(tiny_llama):
    model = build_model(str(tiny_llama), template="eol").eval()
    features = model.preprocess(SENTENCES[:3])
    linears = [m for m in model.modules() if type(m) is nn.Linear]
    with torch.inference_mode():
        with onednn_linears(model) as count:
            inside = _ops_run(model, features)
        after = _ops_run(model, features)
    assert count == len(linears) > 0
    assert "mkldnn::_linear_pointwise" in inside and not {"aten::addmm", "aten::mm"} & inside
    assert "mkldnn::_linear_pointwise" not in after and {"aten::addmm", "aten::mm"} & after
    assert all(type(m) is nn.Linear for m in linears)


@pytest.mark.parametrize("bias", [True, False])
def test_training_through_oneDNN_gives_the_usual_gradients(bias):
    torch.manual_seed(0)
    layer = nn.Linear(16, 8, bias=bias)
    inputs = torch.randn(3, 5, 16, requires_grad=True)
    expected = torch.autograd.grad(layer(inputs).square().sum(), [inputs, *layer.parameters()])
    with onednn_linears(layer):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            got = torch.autograd.grad(layer(inputs).square().sum(), [inputs, *layer.parameters()])
    calls = {event.key: event.count for event in prof.key_averages()}
    assert calls.get("mkldnn::_linear_pointwise", 0) == 3  # forward, input gradient, weight gradient
    for ours, theirs in zip(got, expected, strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_a_copy_made_inside_the_block_computes_with_its_own_weights():
    layer = nn.Linear(4, 4)
    with onednn_linears(layer):
        twin = copy.deepcopy(layer)
        with torch.no_grad():
            twin.weight.zero_()
            twin.bias.fill_(1.0)
    assert torch.equal(twin(torch.randn(2, 4)), torch.ones(2, 4))
    assert type(layer) is nn.Linear


def test_quantized_half_precision_and_hooked_layers_keep_their_own_forward():
    bnb = pytest.importorskip("bitsandbytes")
    hooked = nn.Linear(8, 8)
    hooked.forward = lambda x: x  # e.g. accelerate's hooks replace forward on the instance
    assert routable(nn.Linear(8, 8))
    assert not routable(bnb.nn.Linear4bit(8, 8))
    assert not routable(nn.Linear(8, 8).to(torch.bfloat16))
    assert not routable(hooked)
    with onednn_linears(nn.Linear(8, 8), active=False) as count:
        assert count == 0


@pytest.mark.parametrize("onednn", [True, False])
def test_a_run_trains_through_oneDNN_unless_told_not_to(onednn, tiny_bert, shared_senteval, tmp_path):
    config = tiny_run(tiny_bert, shared_senteval, pairs_jsonl(tmp_path / "pairs.jsonl"), tmp_path / "run")
    config["onednn"] = onednn
    config["stages"][0] |= {"max_steps": 2, "dev": "none"}
    training: list[bool] = []  # per oneDNN product: True in training (evaluations run in inference mode)
    gemm = onednn_module._gemm

    def spy(*args):
        training.append(not torch.is_inference_mode_enabled())
        return gemm(*args)

    with mock.patch("pcctune.modeling.onednn._gemm", side_effect=spy):
        pcctune.train(pcctune.RunConfig.model_validate(config), overwrite=True)
    linears = sum(type(m) is nn.Linear for m in build_model(str(tiny_bert)).modules())
    if onednn:  # each linear layer's forward in each of the 2 steps, and the gradients' products
        assert sum(training) >= 2 * linears
    else:
        assert sum(training) == 0
