"""Trainer callbacks for state that lives in a loss rather than in the model.

- ``SyncLossParameters``: parameters owned by a loss (the regression head, a trainable MLM
  head) are outside the DDP-wrapped model, so nothing averages their gradients across processes
  and each rank's copy drifts apart. This callback broadcasts them from rank 0 when training
  starts and averages their gradients before every optimizer step, which is what DDP does for
  the model's own parameters.
- ``StepToLoss``: a loss whose schedule depends on the step (DCPCSE's MLM weight
  λ = 0.1 · 0.95^(step/100)) reads the trainer's global step, so the schedule continues where it
  was after ``--resume`` instead of restarting at step 0.
- ``LossParameterCheckpoints``: the trainer's checkpoints hold the model's weights and the optimizer's
  state, not a loss's own modules; this keeps those parameters in every checkpoint and puts them back
  when a stage resumes, so it continues the head it trained rather than one drawn afresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from transformers import TrainerCallback
from typing_extensions import override

from pcctune.distributed import get_world_size, is_distributed
from pcctune.errors import PcctuneError
from pcctune.training.checkpoints import checkpoint_name

LOSS_PARAMETERS = "loss_parameters.pt"
"""The file in a checkpoint that holds the loss's own parameters (``LossParameterCheckpoints``)."""


class SyncLossParameters(TrainerCallback):
    """Keeps the loss's own parameters alike on every process: broadcast from rank 0 when training starts, their
    gradients averaged over the processes before each optimizer step."""

    def __init__(self, parameters: list[nn.Parameter]) -> None:
        self.parameters = parameters

    @override
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if is_distributed():
            for parameter in self.parameters:
                dist.broadcast(parameter.data, src=0)

    @override
    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not is_distributed():
            return
        world = get_world_size()
        for parameter in self.parameters:
            if parameter.grad is not None:
                dist.all_reduce(parameter.grad)
                parameter.grad /= world


class StepToLoss(TrainerCallback):
    """Sets ``loss.step`` to the trainer's global step before every step (also right after a resume)."""

    def __init__(self, loss: nn.Module) -> None:
        self.loss = loss

    @override
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.loss.step = state.global_step


class LossParameterCheckpoints(TrainerCallback):
    """Saves ``parameters`` (a loss's own: the regression head, a trainable MLM head) into every checkpoint, and loads
    them back from the checkpoint a stage resumes from, before anything trains (and before ``SyncLossParameters``
    broadcasts them)."""

    def __init__(self, parameters: list[nn.Parameter]) -> None:
        self.parameters = parameters

    @override
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == 0:
            return
        path = Path(args.output_dir) / checkpoint_name(state.global_step) / LOSS_PARAMETERS
        if not path.is_file():
            raise PcctuneError(
                f"{path.parent} lacks its loss's own parameters ({LOSS_PARAMETERS}): a resume would train a head "
                "drawn afresh; resume from a checkpoint that holds them, or start the stage over (--overwrite)"
            )
        saved = torch.load(path, map_location="cpu", weights_only=True)
        if [tuple(t.shape) for t in saved] != [tuple(p.shape) for p in self.parameters]:
            raise PcctuneError(f"{path}: the loss's parameters there have other shapes than this stage's loss")
        with torch.no_grad():
            for parameter, value in zip(self.parameters, saved, strict=True):
                parameter.copy_(value.to(parameter.device, parameter.dtype))

    def write_checkpoint(self, folder: Path) -> None:
        """Into a checkpoint being written, before its trainer state (``pcctune.training.trainer.CheckpointWriter``)."""
        torch.save([p.detach().cpu() for p in self.parameters], folder / LOSS_PARAMETERS)
