"""A parallel job's share of the CPU's cores, kept equal among the jobs running as they start and end.

``run_jobs`` runs several jobs at once, each in its own process. A job started beside another gets half of two
cores; when the other ends, the one left would keep its half for the rest of its run (a stage-2 run of the decoder
claim for hours), the other core idle. So the parent keeps the share of the moment in one shared integer, the cores
over the jobs running, and each job's process takes it as it starts and at every training step: a trainer callback
(``CoreShare``) that ``train_once`` adds where it runs in such a process. torch's thread count is set on the
process's main thread, the one its training and its intra-op parallel regions run from. A new thread count changes
how a product is split among threads, so float rounding only, as the CPU's own kernels do.
"""

from __future__ import annotations

from typing import Any

_share: Any = None
"""The shared integer of the process pool this process works for (``follow``); ``None`` outside one."""


def equal_share(cores: int, running: int) -> int:
    """Each of ``running`` jobs' threads on ``cores`` cores: an equal share, at least one."""
    return max(1, cores // max(1, running))


def follow(share: Any) -> None:
    """A pool worker's initializer: follow ``share`` (a ``multiprocessing`` shared integer the parent sets)."""
    global _share
    _share = share
    take_share()


def take_share() -> None:
    """Set torch's thread count to the share of the moment, where this process follows one and it changed."""
    if _share is None:
        return
    import torch

    threads = int(_share.value)
    if threads >= 1 and threads != torch.get_num_threads():
        torch.set_num_threads(threads)


def job_callbacks() -> list[Any]:
    """The trainer callbacks a training job adds: ``CoreShare`` in a pool worker, none elsewhere."""
    return [] if _share is None else [core_share()]


def core_share() -> Any:
    """A transformers ``TrainerCallback`` that takes the share of the moment before every training step."""
    from transformers import TrainerCallback

    class CoreShare(TrainerCallback):
        """Takes this job's share of the cores before each step (``take_share``)."""

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            take_share()

    return CoreShare()
