"""A parallel job's share of the CPU's cores, kept equal among the jobs running as they start and end.

``run_jobs`` runs several jobs at once, each in its own process on ``cores // jobs`` threads (its cap). A job left
running alone (the last of a plan's runs, or one whose successors wait for its record) would keep that share for
the rest of its run, for hours on the 2-core machine, the other core idle. So the parent keeps the share of the
moment in one shared integer, the cores over the jobs running, and each training step runs on it: a trainer
callback (``CoreShare``) that ``train_once`` adds where it runs in such a process takes the share as a step begins
and gives back what it took above the cap as the step ends, so that loading, dev evaluations and test scoring (and
jobs with no training steps) keep to the cap, and a job started beside one that went above it shares the cores
with it for at most the rest of one step. torch's thread count is set on the process's main thread, the one its
training steps and their intra-op parallel regions run from. A new thread count changes how a product is split among
threads, so float rounding only, as the CPU's own kernels do.
"""

from __future__ import annotations

from typing import Any

_share: Any = None
"""The shared integer of the process pool this process works for (``follow``); ``None`` outside one."""
_cap = 1
"""This process's threads outside its training steps: the cores over the pool's jobs."""


def equal_share(cores: int, running: int) -> int:
    """Each of ``running`` jobs' threads on ``cores`` cores: an equal share, at least one."""
    return max(1, cores // max(1, running))


def follow(share: Any, cap: int) -> None:
    """A pool worker's initializer: run on ``cap`` threads, and follow ``share`` (a ``multiprocessing`` shared
    integer the parent sets) in training steps."""
    global _share, _cap
    _share, _cap = share, cap
    _set_threads(cap)


def take_share() -> None:
    """Run on the share of the moment (a training step begins), where this process follows one."""
    if _share is not None:
        _set_threads(int(_share.value))  # the parent keeps it at one or more (equal_share)


def give_back() -> None:
    """Run on the cap again (a training step ended), where this process follows a share."""
    if _share is not None:
        _set_threads(_cap)


def _set_threads(threads: int) -> None:
    import torch

    if threads != torch.get_num_threads():
        torch.set_num_threads(threads)


def job_callbacks() -> list[Any]:
    """The trainer callbacks a training job adds: ``CoreShare`` in a pool worker, none elsewhere."""
    return [] if _share is None else [core_share()]


def core_share() -> Any:
    """A transformers ``TrainerCallback`` that runs each training step on the share of the moment."""
    from transformers import TrainerCallback

    class CoreShare(TrainerCallback):
        """``take_share`` as a step begins, ``give_back`` as it ends."""

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            take_share()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            give_back()

    return CoreShare()
