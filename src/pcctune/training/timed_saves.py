"""Checkpoints by the clock as well as by the step, so an interrupted stage loses minutes, not an interval.

A stage checkpoints every ``eval_steps`` (where the dev set is scored). On a slow machine that
interval can be half an hour (a 4-bit decoder's stage 2 here: 21 steps of ~85 s), and a session
that ends inside it loses all of it. ``SaveEvery`` also asks the trainer to save once
``minutes`` have passed since the last checkpoint. Such an off-grid checkpoint (its step is not a
multiple of ``eval_steps``) is only a resume point: it is deleted as soon as a later checkpoint is
written, so at most one exists beside the regular ones, and it is never the dev-selected one (it
carries no dev score). ``--resume`` continues from it like from any other, to the same numbers as an
uninterrupted run (the trainer restores the data order and the RNG states).

Under torchrun every rank must save at the same step (saving synchronises the processes), so rank
0's clock decides and its decision is broadcast.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Any

import torch.distributed as dist
from transformers import TrainerCallback
from typing_extensions import override

from pcctune.distributed import is_distributed, is_main_process
from pcctune.training.checkpoints import CHECKPOINT, checkpoint_name, checkpoints

logger = logging.getLogger(__name__)


def is_off_grid(checkpoint: Path, save_steps: int) -> bool:
    """True for a checkpoint written by the clock: its step is not one of the stage's regular saves."""
    match = CHECKPOINT.match(checkpoint.name)
    return match is not None and int(match.group(1)) % save_steps != 0


class SaveEvery(TrainerCallback):
    """Save a checkpoint when ``minutes`` have passed since the last one; drop the previous clock-made one."""

    def __init__(self, minutes: float) -> None:
        self.seconds = minutes * 60
        self.last_save = time.monotonic()

    @override
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last_save = time.monotonic()

    @override
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        due = [time.monotonic() - self.last_save >= self.seconds]
        if is_distributed():
            dist.broadcast_object_list(due, src=0)
        if due[0]:
            control.should_save = True

    @override
    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last_save = time.monotonic()
        if not is_main_process():
            return
        keep = {checkpoint_name(state.global_step), Path(state.best_model_checkpoint or "").name}
        for checkpoint in checkpoints(Path(args.output_dir)):
            if is_off_grid(checkpoint, args.save_steps) and checkpoint.name not in keep:
                logger.info("removing %s, a resume point that a later checkpoint replaces", checkpoint)
                shutil.rmtree(checkpoint, ignore_errors=True)
