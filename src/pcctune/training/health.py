"""Training health: a non-finite loss or gradient never reaches the weights.

transformers' trainer hides a NaN or inf loss in its logged average (``logging_nan_inf_filter``) and
applies the step anyway, so a diverging stage (too high a learning rate, a bad row) trains on and saves
a broken model as its result. ``NonFiniteGuard`` looks at every trainable gradient before each
optimizer step (a non-finite loss gives non-finite gradients too):

- ``on_nonfinite: stop`` (default) raises ``NonFiniteTraining``, naming the step: the stage writes
  no final model and no results, its last checkpoint (saved before the bad step) is kept, and the run
  may be resumed with a lower learning rate (``pcctune.orchestration.run_folder``);
- ``on_nonfinite: skip`` drops that batch's gradients (the optimizer skips parameters without one) and
  counts the skipped steps.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn
from transformers import TrainerCallback

from pcctune.errors import PcctuneError

OnNonFinite = Literal["stop", "skip"]


class NonFiniteTraining(PcctuneError):
    """A stage stopped on a non-finite loss or gradient; the run may resume with other optimisation settings."""

    def __init__(self, stage: str, step: int) -> None:
        super().__init__(
            f"stage {stage!r}: the loss or a gradient is not finite at step {step}; nothing of that step was "
            "applied and the last checkpoint is kept: lower the learning rate and run again with --resume, "
            "or set on_nonfinite: skip"
        )
        self.stage, self.step = stage, step


def finite_gradients(parameters: list[nn.Parameter]) -> bool:
    """True when every gradient present is finite."""
    return all(p.grad is None or bool(torch.isfinite(p.grad).all()) for p in parameters)


class NonFiniteGuard(TrainerCallback):
    """Stops (or skips) a step whose gradients are not finite, before the optimizer applies it."""

    def __init__(self, parameters: list[nn.Parameter], stage: str, policy: OnNonFinite = "stop") -> None:
        self.parameters, self.stage, self.policy = parameters, stage, policy
        self.skipped = 0

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if finite_gradients(self.parameters):
            return
        if self.policy == "stop":
            raise NonFiniteTraining(self.stage, state.global_step + 1)
        for parameter in self.parameters:
            parameter.grad = None
        self.skipped += 1
