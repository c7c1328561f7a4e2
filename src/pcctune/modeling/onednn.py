"""Inference through oneDNN's linear kernel on CPU: the same products, a faster GEMM where torch's default is slow.

On x86 CPUs torch runs a float ``nn.Linear`` through MKL's GEMM; MKL picks its fast AVX-512 code by CPU vendor, and
on this workplace's AMD EPYC its float32 GEMM ran at about half of oneDNN's on the same shapes (SmolLM2-135M's MLP,
768 × 576 × 1,536: 16–21 ms against 7–9 ms on one thread; the linear layers are 87 % of a decoder's encoding time,
profiled). :func:`onednn_linears` routes a model's float32 linear layers through ``torch.ops.mkldnn``'s
``_linear_pointwise`` (the op torch's own compiler emits for CPU linears) for the time of an encoding and restores
them after. It is used only where no gradient flows (the kernel has no backward); the embeddings equal the MKL ones
up to float rounding (tested).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import torch
from torch import Tensor, nn


def _onednn_linear(module: nn.Linear, inputs: Tensor) -> Tensor:
    """``module(inputs)`` by oneDNN when no gradient is needed and the input is float32; otherwise the usual way."""
    if torch.is_grad_enabled() or inputs.dtype != torch.float32:
        return nn.functional.linear(inputs, module.weight, module.bias)
    return torch.ops.mkldnn._linear_pointwise(inputs, module.weight, module.bias, "none", [], "")


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
    routed = [module for module in model.modules() if isinstance(module, nn.Linear) and routable(module)]
    for module in routed:
        module.forward = partial(_onednn_linear, module)  # type: ignore[method-assign]
    try:
        yield len(routed)
    finally:
        for module in routed:
            del module.forward
