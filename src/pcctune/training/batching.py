"""How a global batch (the InfoNCE candidate pool, the Pearson group) maps onto processes.

Both Pcc-tuning losses are defined over the whole global batch, so gradient accumulation,
which splits a batch into separate loss computations, would silently shrink the Pearson group
(and the InfoNCE negatives) to one micro-batch. pcctune therefore never accumulates: the
configured ``batch_size`` is the group, each process holds ``batch_size / world_size`` pairs,
and memory is bounded by GradCache mini-batches instead. A requested accumulation of A steps is
translated into mini-batches of ``per_device / A``, which use the same memory.

``steps_per_epoch`` and ``planned_steps`` count a stage's optimizer steps as the trainer will: full batches only
(``dataloader_drop_last``), each process taking an equal share of them (sentence-transformers' trainer turns
accelerate's ``even_batches`` off, so a remainder that does not divide is dropped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcctune.errors import PcctuneError
from pcctune.training.sampling import SourceBatchSampler

if TYPE_CHECKING:
    from datasets import Dataset

    from pcctune.training.config import StageConfig


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


def steps_per_epoch(stage: StageConfig, dataset: Dataset, world_size: int, seed: int) -> int:
    """Optimizer steps in one pass over ``dataset`` on ``world_size`` processes: its full batches
    (``len(dataset) // per-process batch`` for sentence-transformers' samplers; for ``group_by_source``, the full
    batches of each source its ``SourceBatchSampler`` draws), an equal share for each process. A by-source stage
    whose sources give no process a full batch is refused in one line (the trainer would train nothing)."""
    per_device = plan_batches(stage.batch_size, world_size).per_device_batch_size
    if not stage.group_by_source:
        return len(dataset) // per_device // world_size
    batches = len(SourceBatchSampler(dataset, per_device, drop_last=True, seed=seed))
    if batches < world_size:
        raise PcctuneError(
            f"stage {stage.name!r}: group_by_source trains batches of one source, and its {len(dataset)} examples "
            f"give {batches} full batch(es) of {per_device} for {world_size} process(es); lower batch_size"
        )
    return batches // world_size


def planned_steps(stage: StageConfig, per_epoch: int) -> int:
    """The optimizer steps a stage trains: ``max_steps`` where set, else its epochs of ``per_epoch`` steps (rounded
    up, as transformers' trainer rounds a fractional epoch)."""
    return stage.max_steps if stage.max_steps > 0 else math.ceil(stage.epochs * per_epoch)
