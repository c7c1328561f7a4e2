"""Gathering across processes with gradients, so losses see the whole global batch.

``torch.distributed.nn.all_gather`` back-propagates by summing every rank's gradient into the
owner's slice. With a loss that every rank computes identically over the gathered batch (the
Pearson loss), each rank's local gradient is then W times the single-process one, and DDP's
averaging over W ranks restores it exactly. With a loss computed per rank over its own anchors
(InfoNCE), DDP's average of the per-rank means is the global mean. Both are tested against a
single process on the same global batch (``tests/test_distributed.py``).
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank_and_world() -> tuple[int, int]:
    if is_distributed():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def gather(tensor: torch.Tensor, with_grad: bool) -> torch.Tensor:
    """Concatenate ``tensor`` from every rank along dim 0 (every rank must pass the same shape)."""
    if not is_distributed():
        return tensor
    if with_grad:
        return torch.cat(torch.distributed.nn.functional.all_gather(tensor), dim=0)
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor.contiguous())
    return torch.cat(parts, dim=0)


def at_least_fp32(tensor: torch.Tensor) -> torch.Tensor:
    """Upcast half-precision tensors to fp32 for accumulation; keep fp32/fp64 as they are."""
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


def is_main_process() -> bool:
    """Rank 0 under torchrun/accelerate (read from ``RANK`` so it works before the trainer starts)."""
    return int(os.environ.get("RANK", "0")) == 0


def barrier() -> None:
    """Wait for every process (no-op when not distributed)."""
    if is_distributed():
        dist.barrier()
