"""How a global batch (the InfoNCE candidate pool, the Pearson group) maps onto processes.

Both Pcc-tuning losses are defined over the whole global batch, so gradient accumulation,
which splits a batch into separate loss computations, would silently shrink the Pearson group
(and the InfoNCE negatives) to one micro-batch. pcctune therefore never accumulates: the
configured ``batch_size`` is the group, each process holds ``batch_size / world_size`` pairs,
and memory is bounded by GradCache mini-batches instead. A requested accumulation of A steps is
translated into mini-batches of ``per_device / A``, which use the same memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from pcctune.errors import PcctuneError


@dataclass(frozen=True)
class BatchPlan:
    """How one global batch is trained: its size (the loss's group), each process's share, no accumulation (always
    1), and the GradCache mini-batch that bounds memory (``None``: the share at once)."""

    group_size: int
    per_device_batch_size: int
    gradient_accumulation_steps: int
    mini_batch_size: int | None


def plan_batches(
    group_size: int, world_size: int = 1, accumulation_steps: int = 1, mini_batch_size: int | None = None
) -> BatchPlan:
    """Per-process batch and mini-batch for a global group of ``group_size`` examples."""
    if group_size < 2:
        raise PcctuneError(f"batch_size must be at least 2 (got {group_size})")
    if group_size % world_size:
        raise PcctuneError(f"batch_size {group_size} is not divisible by the {world_size} processes")
    per_device = group_size // world_size
    if accumulation_steps > 1 and mini_batch_size is None:
        mini_batch_size = max(1, per_device // accumulation_steps)
    if mini_batch_size is not None and mini_batch_size >= per_device:
        mini_batch_size = None
    return BatchPlan(group_size, per_device, 1, mini_batch_size)
