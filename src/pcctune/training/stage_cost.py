"""What a stage cost, counted across interruptions: its wall time and peak memory (Pcc-tuning Appendix D, Table 7
reports the memory per stage).

A long stage is often trained by several processes: killed, then resumed from its last checkpoint. Each checkpoint
therefore keeps the cost of the steps it holds (``stage_cost.json``: seconds since the stage began, the peak memory,
how many processes trained it), and a stage resumed from that checkpoint starts its count there. Steps trained after
the last checkpoint of a killed process are trained again, so their time is not counted twice.

Wall time also counts what the process did not spend training: hours stopped (``kill -STOP``) or waiting for cores
that other processes held. The stage's CPU time (``time.process_time``: every thread of the process) does not, so
both are kept; one thread alone on its core gives CPU time ≈ wall time. How many threads torch computed on in each
process is kept beside them: the same stage costs other seconds on one thread than on two.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from typing_extensions import override

from pcctune.io import write_json
from pcctune.training.memory import PeakMemory

COST_FILE = "stage_cost.json"


@dataclass(frozen=True)
class StageCost:
    """Seconds, peak memory (MB), the number of processes (sessions) that trained a stage so far, their CPU seconds,
    and torch's intra-op thread count in each of them, in order (either None when a checkpoint from before its count
    started the stage)."""

    seconds: float = 0.0
    peak_memory_mb: float = 0.0
    sessions: int = 0
    cpu_seconds: float | None = 0.0
    threads: tuple[int, ...] | None = ()


def cost_in(checkpoint: str | None) -> StageCost:
    """The cost recorded in ``checkpoint``: nothing for a fresh stage; for a checkpoint without it (saved before this
    record, or its process killed between the checkpoint and its cost file) one earlier process whose seconds are
    not counted and whose CPU time and thread count are unknown."""
    if not checkpoint:
        return StageCost()
    path = Path(checkpoint) / COST_FILE
    if not path.is_file():
        return StageCost(sessions=1, cpu_seconds=None, threads=None)
    kept = {"cpu_seconds": None, "threads": None} | json.loads(path.read_text())
    return StageCost(**kept | {"threads": None if kept["threads"] is None else tuple(kept["threads"])})


class StageClock(TrainerCallback):
    """Counts this process's time and peak memory on top of ``before``, and writes the total into every checkpoint.
    The thread count is torch's when training begins (accelerate may set it once the trainer's state exists), or
    the most a training step ran on where a callback after this one changed it (a job sharing the cores with others,
    ``reproductions._core_share``)."""

    def __init__(self, before: StageCost, memory: PeakMemory) -> None:
        self.before = before
        self.memory = memory
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()
        self.threads = torch.get_num_threads()

    def total(self) -> StageCost:
        """The stage's cost so far, the earlier sessions' (``before``) included: wall and CPU seconds, peak memory,
        threads."""
        cpu_before = self.before.cpu_seconds
        return StageCost(
            seconds=round(self.before.seconds + time.perf_counter() - self.started, 1),
            peak_memory_mb=round(max(self.before.peak_memory_mb, self.memory.so_far()), 1),
            sessions=self.before.sessions + 1,
            cpu_seconds=None if cpu_before is None else round(cpu_before + time.process_time() - self.cpu_started, 1),
            threads=None if self.before.threads is None else (*self.before.threads, self.threads),
        )

    @override
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.threads = torch.get_num_threads()

    @override
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.threads = max(self.threads, torch.get_num_threads())

    def write_checkpoint(self, folder: Path) -> None:
        """Into a checkpoint being written, before its trainer state (``pcctune.training.trainer.CheckpointWriter``)."""
        write_json(asdict(self.total()), folder / COST_FILE)
