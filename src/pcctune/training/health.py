"""Training health: a non-finite loss or gradient never reaches the weights.

transformers' trainer hides a NaN or inf loss in its logged average (``logging_nan_inf_filter``) and
applies the step anyway, so a diverging stage (too high a learning rate, a bad row) trains on and saves
a broken model as its result. ``NonFiniteGuard`` looks at every trainable gradient before each
optimizer step (a non-finite loss gives non-finite gradients too):

- ``on_nonfinite: stop`` (default) raises ``NonFiniteTraining``, naming the step: the stage writes
  no final model and no results, its last checkpoint (saved before the bad step) is kept, and the run
  may be resumed with a lower learning rate (``pcctune.orchestration.run_folder``);
- ``on_nonfinite: skip`` drops that batch's gradients (the optimizer skips parameters without one) and logs the
  step in the trainer's log history (``SKIPPED``), which checkpoints keep and a resume restores, so the stage's
  record counts every skipped step once (``skipped_steps``).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn
from transformers import TrainerCallback
from typing_extensions import override

from pcctune.errors import PcctuneError

OnNonFinite = Literal["stop", "skip"]
SKIPPED = "nonfinite_skipped"
"""The key of the trainer's log row that ``on_nonfinite: skip`` writes for each step it dropped."""


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

    @override
    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if finite_gradients(self.parameters):
            return
        if self.policy == "stop":
            raise NonFiniteTraining(self.stage, state.global_step + 1)
        for parameter in self.parameters:
            parameter.grad = None
        state.log_history.append({SKIPPED: 1, "step": state.global_step + 1})


def skipped_steps(history: list[dict[str, Any]]) -> int:
    """How many steps ``on_nonfinite: skip`` dropped, from the trainer's log ``history``."""
    return sum(1 for row in history if SKIPPED in row)
