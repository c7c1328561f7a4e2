"""oneDNN's linear kernel for inference: the same embeddings, the kernel really used, everything restored after."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from pcctune.modeling.build import build_model
from pcctune.modeling.encoding import encode_texts
from pcctune.modeling.onednn import onednn_linears, routable
from tests.conftest import SENTENCES

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
    assert not any("forward" in vars(m) for m in linears)


def test_a_gradient_inside_the_block_takes_the_usual_kernel():
    layer = nn.Linear(8, 4)
    inputs = torch.randn(3, 8)
    with onednn_linears(layer):
        out = layer(inputs)
    assert out.grad_fn is not None
    out.sum().backward()
    assert layer.weight.grad is not None and torch.allclose(layer.weight.grad, inputs.sum(0).expand(4, 8))


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
