"""Dropout drawn by its gaps: the masks of ``nn.Dropout``, from about p·n random draws instead of n.

Dropout (Srivastava et al. 2014, eq. 1: r ~ Bernoulli(1 − p), y = r ⊙ x / (1 − p)) on a CPU tensor draws one
Bernoulli number per element (``aten::bernoulli_``) from torch's CPU generator, one element after another. In
QLoRA's stage-2 step on SmolLM2-135M (LoRA dropout 0.05 on the input of every adapted layer, Dettmers et al. 2023
§4) those draws took about a quarter of the step (``benchmarks/results/speed``). The positions that independent
Bernoulli(p) trials drop are separated by gaps that are independent Geometric(p) draws (the trials up to and
including the next drop), so drawing the gaps (``Tensor.geometric_``) and dropping at their running sums gives
masks of exactly the same distribution from about p·n draws. The draws come from torch's generator, so a seed, a
saved RNG state and GradCache's replay of a forward pass (which restores that state) hold them as they hold
``nn.Dropout``'s; the stream is another one, so a run differs from one with torch's sampler as two seeds differ.

``gap_dropout`` gives a model's ``nn.Dropout`` modules this sampler for the time of a block (a run's
``dropout_sampler: gaps``) and their own class back after. Where gaps would not save draws (p above
``LARGEST_P``), on other devices and outside training, a layer is ``nn.Dropout`` as before.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn
from typing_extensions import override

from pcctune.modeling.shared_changes import Undo, shared_changes

LARGEST_P = 0.2
"""The largest dropout probability drawn by gaps: a geometric draw costs a logarithm, a few Bernoulli draws' worth
(about 9 ns against about 4 ns an element in a microbenchmark on the 2-core Zen 5 EPYC, under load; not a kept
record), so gaps pay while p stays well below that ratio."""


def dropped_positions(count: int, p: float) -> Tensor:
    """The flat positions (``int64``, increasing) that ``count`` independent Bernoulli(p) trials drop: the running sums
    of Geometric(p) gaps, drawn in chunks until they pass ``count``."""
    expected = count * p
    chunk = int(expected + 6 * math.sqrt(expected) + 16)
    ends = torch.empty(chunk, dtype=torch.float64).geometric_(p).cumsum_(0)
    parts = [ends]
    while parts[-1][-1] <= count:
        parts.append(torch.empty(chunk, dtype=torch.float64).geometric_(p).cumsum_(0) + parts[-1][-1])
    ends = torch.cat(parts) if len(parts) > 1 else ends
    inside = int(torch.searchsorted(ends, torch.tensor([float(count)], dtype=ends.dtype), right=True))
    return ends[:inside].long() - 1  # the running sums increase: those up to ``count`` are a prefix


class _GapDropoutFunction(torch.autograd.Function):
    """y = x / (1 − p) with the dropped positions set to 0; its gradient likewise. Only the positions are kept for
    the backward pass (about p·n integers, where ``nn.Dropout`` keeps an n-element mask)."""

    @staticmethod
    def forward(ctx: Any, inputs: Tensor, p: float) -> Tensor:
        positions = dropped_positions(inputs.numel(), p)
        ctx.save_for_backward(positions)
        ctx.scale = 1.0 / (1.0 - p)
        return _masked(inputs, positions, ctx.scale)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (positions,) = ctx.saved_tensors
        return _masked(grad, positions, ctx.scale), None


def _masked(values: Tensor, positions: Tensor, scale: float) -> Tensor:
    out = values * scale
    out.view(-1)[positions] = 0  # a fresh contiguous tensor: its flat view is its storage
    return out


class GapDropout(nn.Dropout):
    """``nn.Dropout`` whose training masks on CPU are drawn by their gaps (the class a layer takes for the block)."""

    @override
    def forward(self, inputs: Tensor) -> Tensor:
        if not self.training or self.p == 0 or self.p > LARGEST_P or inputs.device.type != "cpu":
            return super().forward(inputs)
        return _GapDropoutFunction.apply(inputs, self.p)


def _route(module: nn.Module) -> Undo | None:
    """Give a plain ``nn.Dropout`` the gap sampler; how to give it its own class back (``None``: it keeps it)."""
    if type(module) is not nn.Dropout or "forward" in vars(module):
        return None
    module.__class__ = GapDropout

    def undo() -> None:
        module.__class__ = nn.Dropout

    return undo


@contextmanager
def gap_dropout(model: nn.Module, active: bool = True) -> Iterator[int]:
    """Inside the block, ``model``'s ``nn.Dropout`` modules draw their masks by gaps (``GapDropout``); yields how
    many do (0 when not ``active``). Blocks on the same modules may overlap (``shared_changes``)."""
    if not active:
        yield 0
        return
    with shared_changes(list(model.modules()), "gap_dropout", _route) as routed:
        yield routed
