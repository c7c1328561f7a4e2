"""Processes under torchrun/accelerate: gathering with gradients, rank 0, barriers.

Gathering is sentence-transformers' own (``sentence_transformers.util.distributed``):
``all_gather(..., with_grad=True)`` back-propagates by summing every rank's gradient into the
owner's slice. With a loss that every rank computes identically over the gathered batch (the
Pearson loss), each rank's local gradient is then W times the single-process one, and DDP's
averaging over W ranks restores it exactly. With a loss computed per rank over its own anchors
(InfoNCE), DDP's average of the per-rank means is the global mean. Both are tested against a
single process on the same global batch (``tests/test_distributed.py``).
"""

from __future__ import annotations

import gc
import os

import torch
import torch.distributed as dist
from sentence_transformers.util.distributed import all_gather, get_rank, get_world_size

__all__ = [
    "barrier",
    "close_process_group",
    "finish",
    "gather",
    "get_rank",
    "get_world_size",
    "is_distributed",
    "is_main_process",
    "launched_world_size",
]


def is_distributed() -> bool:
    """True when more than one process trains (torchrun, accelerate)."""
    return get_world_size() > 1


def gather(tensor: torch.Tensor, with_grad: bool) -> torch.Tensor:
    """Concatenate ``tensor`` from every rank along dim 0 (the tensor itself when not distributed)."""
    return all_gather(tensor.contiguous(), with_grad=with_grad) if is_distributed() else tensor


def is_main_process() -> bool:
    """Rank 0 under torchrun/accelerate (read from ``RANK`` so it works before the trainer starts)."""
    return int(os.environ.get("RANK", "0")) == 0


def launched_world_size() -> int:
    """The number of processes torchrun/accelerate launched (read from ``WORLD_SIZE`` so it works before the trainer
    starts its process group, as a stage plans its batches)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def barrier() -> None:
    """Wait for every process (no-op when not distributed)."""
    if is_distributed():
        dist.barrier()


def finish() -> None:
    """End a distributed command cleanly: wait for every process, then close the process group.

    Without it, a process that is done exits while rank 0 still writes results, and the
    default group is torn down at interpreter exit, which can abort a process.
    """
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        close_process_group()


def close_process_group() -> None:
    """Close the default process group, after collecting the garbage that may still hold it.

    A DDP wrapper left in a reference cycle (a finished trainer's) holds the group through its reducer. Were the
    reducer the group's last holder, freeing it would close a gloo group while holding the GIL, and gloo's worker
    threads, which need the GIL to free a finished collective's tensors, would never let it finish: a hang at exit,
    seen on busy CPUs. Collected first, the reducer lets go and the group closes outside the GIL.
    """
    gc.collect()
    dist.destroy_process_group()
