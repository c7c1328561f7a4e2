"""Linear layers through oneDNN's GEMM on CPU: the same products, a faster kernel where torch's default is slow.

On x86 CPUs torch runs a float ``nn.Linear`` through MKL's GEMM; MKL picks its fast AVX-512 code by CPU vendor, and
on the 2-core AMD EPYC of the earlier speed records (its SIMD flags were not recorded) its float32 GEMM ran at about
half of oneDNN's on the same shapes (SmolLM2-135M's MLP, 768 × 576 × 1,536: 16–21 ms against 7–9 ms on one thread;
the linear layers are 87 % of a decoder's encoding time, profiled). On an AVX2-only AMD EPYC (Zen 3), where both
run AVX2 code, the two kernels ran all-MiniLM-L6-v2's shapes within noise of each other (55–68 GFLOP/s on one
thread, ``benchmarks/results/speed``) once oneDNN gets its weights reordered in advance (below).

``onednn_linears`` routes a model's float32 linear layers through ``torch.ops.mkldnn``'s ``_linear_pointwise``
(the op torch's own compiler emits for CPU linears) for the time of a block and restores them after. The op has no
backward of its own: ``_OneDNNLinearFunction`` gives it one from the same kernel, so the block may train too.
Results equal MKL's up to float rounding (tested, forward and gradients). Blocks on one model may overlap, in one
thread or several (``shared_changes``); code outside them that uses the model meanwhile sees
the routed classes, so encoding routes only where the host settings ask (``pcctune.host_settings``: the
``pcctune`` command does, the Python API not unless asked) and training where its run config says
(``onednn``). A training step reorders no weight (they change at every step), and there the float32 route lost on
the AVX2-only AMD EPYC: all-MiniLM-L6-v2 at batch 64, 3.20 s a cosine-MSE step against 2.41 s on torch's default
and 1.66 s against 1.37 s a Pearson step, with more memory (``benchmarks/results/speed``). A run's default
(``onednn: auto``) therefore routes only QLoRA's 4-bit layers (``only_4bit``), whose route won (below).

Inside ``frozen_weights`` (one call of the encoder, whose weights do not change meanwhile) the weight is
handed to oneDNN already reordered into its blocked GEMM layout (``torch.ops.mkldnn._reorder_linear_weight``, as
torch's compiler does for frozen CPU linears) instead of being reordered at every call: on the AVX2-only AMD EPYC
the unreordered route ran 5–15 % behind both MKL and the reordered one on all-MiniLM-L6-v2's and SmolLM2-135M's
shapes (one thread). The reordered copy is made at a layer's first call in the scope and dropped when the scope
ends, so the next scope sees the weights as they are then. No version counter is trusted to tell a changed weight:
a fused optimizer step (``torch.optim.AdamW(fused=True)``, the trainer's default), ``w.data += x`` and peft's
``merge_adapter`` change a weight in place without moving it. Outside such a scope the weight is used as it is.

Under CPU autocast (``bf16: true``) every layer keeps its own forward, so autocast casts its inputs as usual: the
oneDNN op returns float32 where autocast's ``F.linear`` returns bfloat16.

QLoRA's frozen NF4 layers (bitsandbytes' ``Linear4bit`` with an fp32 compute dtype; Dettmers et al. 2023, eq. 5:
``Y = X · doubleDequant(c₁, c₂, W^NF4) + X L₁ L₂``) are routed too: on CPU bitsandbytes dequantizes the weight and
multiplies by MKL, forward and backward. ``_OneDNN4bitFunction`` multiplies the same dequantized weight by
oneDNN and, as bitsandbytes, dequantizes it again for the input gradient instead of keeping it (576 → 1,536, 640
rows, one thread: 13–14 ms against 37–48 ms a forward and backward). Inside ``kept_dequantized`` (a training stage,
whose 4-bit base is frozen; a run's ``dequantized_cache_mb``) each weight is dequantized once and kept instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
from torch import Tensor, nn
from typing_extensions import override

from pcctune.modeling.quantization import linear_4bit_layers, loaded_linear_4bit_type
from pcctune.modeling.shared_changes import Undo, shared_changes


def _gemm(inputs: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``inputs @ weight.T + bias`` by oneDNN."""
    return torch.ops.mkldnn._linear_pointwise(inputs, weight, bias, "none", [], "")


@dataclass
class _ScopedCopies:
    """Copies made from tensors for the time of one scope (``frozen_weights``, ``kept_dequantized``): by key, the
    tensor a copy was made from (kept alive for the scope, so that no other tensor takes its key) and the copy;
    ``room``, the bytes still free for copies (``None``: no limit). A copy that does not fit is made again at each
    call. Threads running in a copy of the scope's context share one store; its bookkeeping is locked, and two
    threads may both make a missing copy (the same copy: harmless)."""

    room: int | None = None
    copies: dict[Hashable, tuple[Tensor, Tensor]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: Hashable, source: Tensor, make: Callable[[], Tensor]) -> Tensor:
        """The copy of ``source`` kept under ``key``, made by ``make`` (and kept, where it fits) at the first call."""
        found = self.copies.get(key)
        if found is not None:
            return found[1]
        copy = make()
        with self.lock:
            if key not in self.copies and (self.room is None or copy.nbytes <= self.room):
                self.room = None if self.room is None else self.room - copy.nbytes
                self.copies[key] = (source, copy)
        return copy


@contextmanager
def _scope(store: ContextVar[_ScopedCopies | None], copies: _ScopedCopies | None) -> Iterator[None]:
    token = store.set(copies)
    try:
        yield
    finally:
        store.reset(token)


_FROZEN: ContextVar[_ScopedCopies | None] = ContextVar("pcctune_frozen_weights", default=None)
"""Inside ``frozen_weights``: each routed weight's reordered copy, by the weight's ``id``; ``None`` outside."""


def frozen_weights() -> AbstractContextManager[None]:
    """A scope in which the routed layers' weights do not change: each is reordered for oneDNN once, at its first
    inference call, and the copies are dropped at exit. Threads that should share the copies run in a copy of the
    caller's context (``contextvars.copy_context().run``)."""
    return _scope(_FROZEN, _ScopedCopies())


def _inference_weight(weight: Tensor) -> Tensor:
    """``weight`` in oneDNN's blocked layout, reordered once per ``frozen_weights`` scope; as it is outside."""
    copies = _FROZEN.get()
    if copies is None:
        return weight
    return copies.get(id(weight), weight, lambda: torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))


def _keeps_own_forward(inputs: Tensor) -> bool:
    """True where a routed layer runs its own class's forward: non-float32 inputs, or CPU autocast (which casts
    inside ``F.linear``, not inside oneDNN's op)."""
    return inputs.dtype != torch.float32 or torch.is_autocast_enabled("cpu")


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

    @override
    def forward(self, inputs: Tensor) -> Tensor:
        if _keeps_own_forward(inputs):
            return super().forward(inputs)
        if torch.is_inference_mode_enabled():
            return _gemm(inputs, _inference_weight(self.weight), self.bias)
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


_KEPT: ContextVar[_ScopedCopies | None] = ContextVar("pcctune_kept_dequantized", default=None)
"""Inside ``kept_dequantized``: each packed 4-bit weight's dequantized copy, by (the address of the packed weight's
data, dtype). The address, not the tensor's ``id``: a layer hands over ``weight.data``, a new tensor object at every
call."""


def kept_dequantized(budget_mb: float) -> AbstractContextManager[None]:
    """A scope in which each routed 4-bit weight is dequantized once, at its first call, and its float copy kept for
    every later forward and backward pass, up to ``budget_mb`` MB of copies in all (later layers dequantize at each
    call, as outside); the copies are dropped at exit. The same numbers: the copy is what every call would compute.
    For blocks in which the 4-bit weights do not change, as in QLoRA's training, whose base is frozen."""
    return _scope(_KEPT, _ScopedCopies(room=int(budget_mb * 2**20)) if budget_mb > 0 else None)


def _dequantized(packed: Tensor, quant_state: Any, dtype: torch.dtype) -> Tensor:
    """The (out, in) float weight of a packed 4-bit tensor, by bitsandbytes' own dequantization (kept inside
    ``kept_dequantized`` while its budget lasts)."""
    from bitsandbytes.functional import dequantize_4bit

    make = lambda: dequantize_4bit(packed, quant_state).to(dtype)  # noqa: E731
    kept = _KEPT.get()
    return make() if kept is None else kept.get((packed.data_ptr(), dtype), packed, make)


@cache
def _onednn_linear_4bit_class() -> type[nn.Module]:
    """The class a routed ``Linear4bit`` takes for the block (made on first use: bitsandbytes is optional)."""
    from bitsandbytes.nn import Linear4bit

    class OneDNNLinear4bit(Linear4bit):
        """A ``Linear4bit`` whose float32 products run by oneDNN on its dequantized weight."""

        def forward(self, inputs: Tensor) -> Tensor:
            state = getattr(self.weight, "quant_state", None)
            if (
                _keeps_own_forward(inputs)
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


def _route(module: nn.Module) -> Undo | None:
    """Give ``module`` its routed class; how to give it back its own (``None`` where it keeps its own)."""
    new, own = routed_class(module), type(module)
    if new is None:
        return None
    module.__class__ = new

    def undo() -> None:
        module.__class__ = own

    return undo


@contextmanager
def onednn_linears(model: nn.Module, active: bool = True, only_4bit: bool = False) -> Iterator[int]:
    """Route ``model``'s routable linear layers (only its 4-bit ones where ``only_4bit``) through oneDNN inside the
    block; yields how many are routed (0 when ``active`` is false or torch has no oneDNN). Blocks on the same layers
    may overlap, in one thread or several: the last to end gives the layers their own classes back
    (``shared_changes``)."""
    if not (active and torch.backends.mkldnn.is_available()):
        yield 0
        return
    layers = linear_4bit_layers(model) if only_4bit else model.modules()
    with shared_changes(layers, "onednn", _route) as routed:
        yield routed
