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
from pcctune.modeling.onednn import OneDNNLinear, onednn_linears, routed_class
from tests.conftest import SENTENCES, pairs_jsonl, tiny_run

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")


def _ops_run(model, features) -> set[str]:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(features)
    return {event.key for event in prof.key_averages()}


@pytest.mark.parametrize(("fixture", "template"), [("tiny_bert", None), ("tiny_llama", "eol")])
def test_encoding_through_onednn_gives_the_mkl_embeddings(fixture, template, request):
    model = build_model(str(request.getfixturevalue(fixture)), template=template, device="cpu")
    texts = [*SENTENCES, "a"]
    routed = encode_texts(model, texts, onednn=True)
    plain = encode_texts(model, texts, onednn=False)
    np.testing.assert_allclose(routed, plain, atol=1e-5)


def test_the_linear_layers_run_oneDNNs_kernel_inside_and_their_own_after(tiny_llama):
    model = build_model(str(tiny_llama), template="eol", device="cpu").eval()
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


def test_inference_reorders_a_weight_once_per_scope_and_sees_in_place_changes_in_the_next():
    torch.manual_seed(0)
    layer, inputs = nn.Linear(16, 8), torch.randn(3, 5, 16)
    optimizer = torch.optim.AdamW(layer.parameters(), lr=0.1, fused=True)  # steps without moving _version
    outputs = []
    with (
        onednn_linears(layer),
        mock.patch.object(
            torch.ops.mkldnn, "_reorder_linear_weight", wraps=torch.ops.mkldnn._reorder_linear_weight
        ) as reorder,
    ):
        for change in ("fused optimizer step", "w.data += x", "w.data = y"):
            with torch.inference_mode(), onednn_module.frozen_weights():
                first, again = layer(inputs), layer(inputs)  # the second call uses the scope's reordered copy
                expected = nn.functional.linear(inputs, layer.weight, layer.bias)
                outputs += [(first, expected), (again, expected)]
            if change == "fused optimizer step":
                layer(inputs).square().sum().backward()
                optimizer.step()
            elif change == "w.data += x":
                layer.weight.data += 1.0
            else:
                layer.weight.data = layer.weight.data * 2.0
            with torch.inference_mode(), onednn_module.frozen_weights():
                outputs.append((layer(inputs), nn.functional.linear(inputs, layer.weight, layer.bias)))
        with torch.inference_mode():
            outside = layer(inputs)  # no scope: the weight as it is, not reordered
    assert reorder.call_count == 6  # once per scope
    for ours, expected in outputs:
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(outside, nn.functional.linear(inputs, layer.weight, layer.bias))


def test_under_cpu_autocast_a_routed_layer_computes_in_bfloat16_as_its_own_class():
    layer, inputs = nn.Linear(16, 8), torch.randn(3, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = layer(inputs)
        with onednn_linears(layer):
            got = layer(inputs)
    assert expected.dtype == got.dtype == torch.bfloat16
    torch.testing.assert_close(got, expected)


def test_half_precision_and_hooked_layers_keep_their_own_forward():
    hooked = nn.Linear(8, 8)
    hooked.forward = lambda x: x  # e.g. accelerate's hooks replace forward on the instance
    assert routed_class(nn.Linear(8, 8)) is OneDNNLinear
    assert routed_class(nn.Linear(8, 8).to(torch.bfloat16)) is None
    assert routed_class(hooked) is None
    assert routed_class(nn.Conv1d(8, 8, 1)) is None
    with onednn_linears(nn.Linear(8, 8), active=False) as count:
        assert count == 0


def _nf4_layer(bias: bool) -> nn.Module:
    """A quantized NF4 ``Linear4bit`` (double quantisation, fp32 compute), as QLoRA loads one."""
    bnb = pytest.importorskip("bitsandbytes")
    torch.manual_seed(0)
    layer = bnb.nn.Linear4bit(64, 32, bias=bias, compute_dtype=torch.float32, quant_type="nf4")
    layer.weight = bnb.nn.Params4bit(torch.randn(32, 64), requires_grad=False, quant_type="nf4")
    if bias:
        layer.bias = nn.Parameter(torch.randn(32))
    layer = layer.to("cpu")  # quantizes
    layer.support_avx512bf16_for_cpu = False  # pcctune's training layout (modeling/quantization.py)
    return layer


@pytest.mark.parametrize("bias", [True, False])
def test_a_4bit_layer_through_oneDNN_gives_bitsandbytes_outputs_and_gradients(bias):
    layer = _nf4_layer(bias)
    own_class = type(layer)
    inputs = torch.randn(3, 5, 64, requires_grad=True)
    wrt = [inputs, layer.bias] if bias else [inputs]

    def output_and_gradients() -> list[torch.Tensor]:
        output = layer(inputs)
        return [output, *torch.autograd.grad(output.square().sum(), wrt)]

    expected = output_and_gradients()
    with onednn_linears(layer) as count:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            got = output_and_gradients()
    calls = {event.key: event.count for event in prof.key_averages()}
    assert count == 1 and type(layer) is own_class
    assert calls.get("mkldnn::_linear_pointwise", 0) == 2  # forward and input gradient; the weight is frozen
    assert not {"aten::addmm", "aten::mm", "aten::linear"} & set(calls)
    for ours, theirs in zip(got, expected, strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-5)


def test_lora_on_a_4bit_model_gets_the_same_gradients_through_oneDNN(tiny_llama):
    from peft import LoraConfig, TaskType

    from pcctune.modeling.quantization import linear_4bit_layers

    torch.manual_seed(0)
    model = build_model(str(tiny_llama), template="eol", quantization={"quant_type": "nf4"}, device="cpu")
    model.add_adapter(
        LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False, task_type=TaskType.FEATURE_EXTRACTION)
    )
    model.train()
    lora = [p for name, p in model.named_parameters() if "lora_" in name]

    def lora_gradients() -> list[torch.Tensor]:
        embeddings = model(model.preprocess(SENTENCES[:4]))["sentence_embedding"]
        return list(torch.autograd.grad(embeddings.square().sum(), lora))

    expected = lora_gradients()
    with onednn_linears(model):
        routed = {type(layer).__name__ for layer in linear_4bit_layers(model)}
        got = lora_gradients()
    assert routed == {"OneDNNLinear4bit"}
    for ours, theirs in zip(got, expected, strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)


def test_only_4bit_routes_a_qlora_models_4bit_layers_and_leaves_its_float32_ones(tiny_llama):
    from peft import LoraConfig, TaskType

    from pcctune.modeling.quantization import linear_4bit_layers

    model = build_model(str(tiny_llama), template="eol", quantization={"quant_type": "nf4"}, device="cpu")
    model.add_adapter(LoraConfig(r=4, target_modules="all-linear", task_type=TaskType.FEATURE_EXTRACTION))
    float32 = [m for m in model.modules() if type(m) is nn.Linear and m.weight.dtype == torch.float32]
    assert float32  # the LoRA factors
    with onednn_linears(model, only_4bit=True) as count:
        routed = {type(layer).__name__ for layer in linear_4bit_layers(model)}
        assert routed == {"OneDNNLinear4bit"} and count == len(linear_4bit_layers(model))
        assert all(type(m) is nn.Linear for m in float32)
    assert {type(layer).__name__ for layer in linear_4bit_layers(model)} != {"OneDNNLinear4bit"}


@pytest.mark.parametrize("onednn", [True, False, "auto"])
def test_a_run_trains_through_oneDNN_unless_told_not_to(onednn, tiny_bert, shared_senteval, tmp_path):
    """``on`` (``true``) routes a float32 model's layers in training; ``off`` (``false``) and ``auto`` do not."""
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
    linears = sum(type(m) is nn.Linear for m in build_model(str(tiny_bert), device="cpu").modules())
    if onednn is True:  # each linear layer's forward in each of the 2 steps, and the gradients' products
        assert sum(training) >= 2 * linears
    else:
        assert sum(training) == 0


def test_a_4bit_weight_is_dequantized_once_inside_kept_dequantized_with_the_same_numbers():
    from bitsandbytes import functional

    from pcctune.modeling.onednn import kept_dequantized

    layer = _nf4_layer(bias=False)
    inputs = torch.randn(3, 5, 64, requires_grad=True)

    def output_and_gradient() -> list[torch.Tensor]:
        output = layer(inputs)
        return [output, *torch.autograd.grad(output.square().sum(), [inputs])]

    with onednn_linears(layer):
        expected = output_and_gradient()
        with mock.patch.object(functional, "dequantize_4bit", wraps=functional.dequantize_4bit) as dequantize:
            with kept_dequantized(budget_mb=1):
                got = output_and_gradient() + output_and_gradient()
            assert dequantize.call_count == 1  # forward and backward, twice: one dequantization
            output_and_gradient()
            assert dequantize.call_count == 3  # outside the scope: at every call again
            with kept_dequantized(budget_mb=1e-3):  # 1 kB: less than the weight's 32 × 64 floats
                output_and_gradient()
            assert dequantize.call_count == 5
    for ours, theirs in zip(got, expected + expected, strict=True):
        torch.testing.assert_close(ours, theirs, atol=0, rtol=0)


def test_kept_dequantized_keeps_one_copy_per_weight_and_dtype_within_its_budget():
    """The copies are told apart by weight and by dtype (a second layer or a bfloat16 call never reads another's
    copy), and the budget counts every copy kept: once it is spent, a weight is dequantized at each call."""
    from bitsandbytes.functional import dequantize_4bit

    from pcctune.modeling import onednn as onednn_module

    first, second = _nf4_layer(bias=False), _nf4_layer(bias=False)
    second.weight = type(second.weight)(torch.randn(32, 64), requires_grad=False, quant_type="nf4")
    second = second.to("cpu")
    weights = [(layer.weight.data, layer.weight.quant_state) for layer in (first, second)]
    expected = {
        (k, dtype): dequantize_4bit(packed, state).to(dtype)
        for k, (packed, state) in enumerate(weights)
        for dtype in (torch.float32, torch.bfloat16)
    }
    assert not torch.equal(expected[0, torch.float32], expected[1, torch.float32])
    one_copy = expected[0, torch.float32].nbytes + expected[0, torch.bfloat16].nbytes  # 8 kB and 4 kB
    with onednn_module.kept_dequantized(budget_mb=(one_copy + 1) / 2**20):
        for _ in range(2):
            for (k, dtype), wanted in expected.items():
                got = onednn_module._dequantized(*weights[k], dtype)
                assert got.dtype == dtype and torch.equal(got, wanted)
        kept = onednn_module._KEPT.get()
        assert kept is not None and len(kept.copies) == 2 and kept.room == 1  # the first weight's two copies
