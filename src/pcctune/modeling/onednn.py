"""Linear layers through oneDNN's GEMM on CPU: the same products, a faster kernel where torch's default is slow.

On x86 CPUs torch runs a float ``nn.Linear`` through MKL's GEMM; MKL picks its fast AVX-512 code by CPU vendor, and
on the 2-core AMD EPYC of the earlier speed records (its SIMD flags were not recorded) its float32 GEMM ran at about
half of oneDNN's on the same shapes (SmolLM2-135M's MLP, 768 × 576 × 1,536: 16–21 ms against 7–9 ms on one thread;
the linear layers are 87 % of a decoder's encoding time, profiled). On an AVX2-only AMD EPYC (Zen 3), where both
run AVX2 code, the two kernels ran all-MiniLM-L6-v2's shapes within noise of each other (55–68 GFLOP/s on one
thread, ``benchmarks/results/speed``) once oneDNN gets its weights reordered in advance (below).

:func:`onednn_linears` routes a model's float32 linear layers through ``torch.ops.mkldnn``'s ``_linear_pointwise``
(the op torch's own compiler emits for CPU linears) for the time of a block and restores them after. The op has no
backward of its own: :class:`_OneDNNLinearFunction` gives it one from the same kernel, so the block may train too.
Results equal MKL's up to float rounding (tested, forward and gradients).

In inference mode the weight is handed to oneDNN already reordered into its blocked GEMM layout
(``torch.ops.mkldnn._reorder_linear_weight``, as torch's compiler does for frozen CPU linears) instead of being
reordered at every call: on the AVX2-only AMD EPYC the unreordered route ran 5–15 % behind both MKL and the
reordered one on all-MiniLM-L6-v2's and SmolLM2-135M's shapes (one thread). The reordered copy is made at a layer's
first inference call in the block, made again if the weight changed in place since (its version counter), and
dropped when the block ends.

QLoRA's frozen NF4 layers (bitsandbytes' ``Linear4bit`` with an fp32 compute dtype; Dettmers et al. 2023, eq. 5:
``Y = X · doubleDequant(c₁, c₂, W^NF4) + X L₁ L₂``) are routed too: on CPU bitsandbytes dequantizes the weight and
multiplies by MKL, forward and backward. :class:`_OneDNN4bitFunction` multiplies the same dequantized weight by
oneDNN and, as bitsandbytes, dequantizes it again for the input gradient instead of keeping it (576 → 1,536, 640
rows, one thread: 13–14 ms against 37–48 ms a forward and backward).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any
from weakref import ref

import torch
from torch import Tensor, nn

from pcctune.modeling.quantization import loaded_linear_4bit_type


def _gemm(inputs: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``inputs @ weight.T + bias`` by oneDNN."""
    return torch.ops.mkldnn._linear_pointwise(inputs, weight, bias, "none", [], "")


_REORDERED: dict[int, tuple[ref[Tensor], int, Tensor]] = {}
"""By ``id`` of a weight: the weight (weakly), its version counter when reordered, and the reordered copy."""


def _reordered(weight: Tensor) -> Tensor:
    """``weight`` in oneDNN's blocked layout, reordered once per version of the weight."""
    kept = _REORDERED.get(id(weight))
    if kept is None or kept[0]() is not weight or kept[1] != weight._version:
        kept = (ref(weight), weight._version, torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))
        _REORDERED[id(weight)] = kept  # two workers may both make it on the first call: the same copy, harmless
    return kept[2]


class _OneDNNLinearFunction(torch.autograd.Function):
    """y = x Wᵀ + b, and its gradients ∂x = g W, ∂W = gᵀ x, ∂b = Σ g, each product by oneDNN."""

    @staticmethod
    def forward(ctx: Any, inputs: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(inputs, weight)
        ctx.has_bias = bias is not None
        return _gemm(inputs, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        inputs, weight = ctx.saved_tensors
        rows = grad.reshape(-1, grad.shape[-1])
        grad_inputs = _gemm(grad, weight.t(), None) if ctx.needs_input_grad[0] else None
        flat_inputs = inputs.reshape(-1, inputs.shape[-1])
        grad_weight = _gemm(rows.t(), flat_inputs.t(), None) if ctx.needs_input_grad[1] else None
        grad_bias = rows.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_inputs, grad_weight, grad_bias


class OneDNNLinear(nn.Linear):
    """An ``nn.Linear`` whose float32 products run by oneDNN (the class a routed layer takes for the block; a copy
    made meanwhile, e.g. a reference model, computes the same way on its own weights)."""

    def forward(self, inputs: Tensor) -> Tensor:
        if inputs.dtype != torch.float32:
            return super().forward(inputs)
        if torch.is_inference_mode_enabled():
            return _gemm(inputs, _reordered(self.weight), self.bias)
        return _OneDNNLinearFunction.apply(inputs, self.weight, self.bias)


class _OneDNN4bitFunction(torch.autograd.Function):
    """y = x Ŵᵀ + b with Ŵ the dequantized 4-bit weight (frozen), and ∂x = g Ŵ, ∂b = Σ g; Ŵ is dequantized again in
    the backward pass rather than kept, as bitsandbytes' ``MatMul4Bit`` does."""

    @staticmethod
    def forward(ctx: Any, inputs: Tensor, packed: Tensor, quant_state: Any, bias: Tensor | None) -> Tensor:
        ctx.packed, ctx.quant_state, ctx.has_bias = packed, quant_state, bias is not None
        return _gemm(inputs, _dequantized(packed, quant_state, inputs.dtype), bias)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, Tensor | None]:
        weight = _dequantized(ctx.packed, ctx.quant_state, grad.dtype)
        grad_inputs = _gemm(grad, weight.t(), None) if ctx.needs_input_grad[0] else None
        grad_bias = grad.reshape(-1, grad.shape[-1]).sum(0) if ctx.has_bias and ctx.needs_input_grad[3] else None
        return grad_inputs, None, None, grad_bias


def _dequantized(packed: Tensor, quant_state: Any, dtype: torch.dtype) -> Tensor:
    """The (out, in) float weight of a packed 4-bit tensor, by bitsandbytes' own dequantization."""
    from bitsandbytes.functional import dequantize_4bit

    return dequantize_4bit(packed, quant_state).to(dtype)


@cache
def _onednn_linear_4bit_class() -> type[nn.Module]:
    """The class a routed ``Linear4bit`` takes for the block (made on first use: bitsandbytes is optional)."""
    from bitsandbytes.nn import Linear4bit

    class OneDNNLinear4bit(Linear4bit):
        """A ``Linear4bit`` whose float32 products run by oneDNN on its dequantized weight."""

        def forward(self, inputs: Tensor) -> Tensor:
            state = getattr(self.weight, "quant_state", None)
            if (
                inputs.dtype != torch.float32
                or self.compute_dtype not in (None, torch.float32)
                or state is None
                or getattr(state, "packing_format_for_cpu", False)
            ):
                return super().forward(inputs)
            return _OneDNN4bitFunction.apply(inputs, self.weight.data, state, self.bias)

    return OneDNNLinear4bit


def routed_class(module: nn.Module) -> type[nn.Module] | None:
    """The class ``module`` takes inside the block, or None where it keeps its own: a plain float32 ``nn.Linear`` or
    a bitsandbytes ``Linear4bit`` on CPU whose ``forward`` nobody else replaced (half-precision layers, other
    subclasses and hooked modules keep theirs)."""
    if "forward" in vars(module) or not isinstance(module, nn.Linear) or module.weight.device.type != "cpu":
        return None
    if type(module) is nn.Linear:
        return OneDNNLinear if module.weight.dtype == torch.float32 else None
    linear_4bit = loaded_linear_4bit_type()
    return _onednn_linear_4bit_class() if linear_4bit is not None and type(module) is linear_4bit else None


@contextmanager
def onednn_linears(model: nn.Module, active: bool = True) -> Iterator[int]:
    """Route ``model``'s routable linear layers through oneDNN inside the block; yields how many were routed (0 when
    ``active`` is false or torch has no oneDNN)."""
    if not (active and torch.backends.mkldnn.is_available()):
        yield 0
        return
    candidates = [(module, type(module), routed_class(module)) for module in model.modules()]
    routed = [(module, own, new) for module, own, new in candidates if new is not None]
    for module, _, new in routed:
        module.__class__ = new
    try:
        yield len(routed)
    finally:
        for module, own, _ in routed:
            module.__class__ = own
            _REORDERED.pop(id(module.weight), None)
