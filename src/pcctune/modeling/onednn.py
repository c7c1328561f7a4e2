"""Linear layers through oneDNN's GEMM on CPU: the same products, a faster kernel where torch's default is slow.

On x86 CPUs torch runs a float ``nn.Linear`` through MKL's GEMM; MKL picks its fast AVX-512 code by CPU vendor, and
on this workplace's AMD EPYC its float32 GEMM ran at about half of oneDNN's on the same shapes (SmolLM2-135M's MLP,
768 × 576 × 1,536: 16–21 ms against 7–9 ms on one thread; the linear layers are 87 % of a decoder's encoding time,
profiled). :func:`onednn_linears` routes a model's float32 linear layers through ``torch.ops.mkldnn``'s
``_linear_pointwise`` (the op torch's own compiler emits for CPU linears) for the time of a block and restores them
after. The op has no backward of its own: :class:`_OneDNNLinearFunction` gives it one from the same kernel, so the
block may train too. Results equal MKL's up to float rounding (tested, forward and gradients).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn


def _gemm(inputs: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``inputs @ weight.T + bias`` by oneDNN."""
    return torch.ops.mkldnn._linear_pointwise(inputs, weight, bias, "none", [], "")


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
        return _OneDNNLinearFunction.apply(inputs, self.weight, self.bias)


def routable(module: nn.Module) -> bool:
    """A plain float32 ``nn.Linear`` on CPU whose ``forward`` nobody else replaced (quantized subclasses such as
    bitsandbytes' ``Linear4bit``, and hooked modules, keep their own)."""
    return (
        type(module) is nn.Linear
        and module.weight.device.type == "cpu"
        and module.weight.dtype == torch.float32
        and "forward" not in vars(module)
    )


@contextmanager
def onednn_linears(model: nn.Module, active: bool = True) -> Iterator[int]:
    """Route ``model``'s routable linear layers through oneDNN inside the block; yields how many were routed (0 when
    ``active`` is false or torch has no oneDNN)."""
    if not (active and torch.backends.mkldnn.is_available()):
        yield 0
        return
    routed = [module for module in model.modules() if routable(module)]
    for module in routed:
        module.__class__ = OneDNNLinear
    try:
        yield len(routed)
    finally:
        for module in routed:
            module.__class__ = nn.Linear
