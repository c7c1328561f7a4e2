"""sentence-transformers' trainer, with these behaviours changed for pcctune's runs.

- A failed reload of the best dev checkpoint is an error. ``SentenceTransformerTrainer._load_best_model``
  catches any exception and only logs it, so a run whose best checkpoint could not be loaded
  would keep the last weights while ``results.json`` names the best checkpoint.
- A model with a 4-bit backbone reloads a checkpoint's *trainable* weights only (the LoRA
  adapter). Its frozen NF4 weights never change during training, and their state-dict form
  (quantisation statistics stored beside each packed weight) does not load back into a model
  whose layers are already quantised. Every trainable weight must be in the checkpoint.
- A checkpoint resumed under another learning rate (allowed after a non-finite stop, see
  ``training/health.py``) continues the schedule at the new peak: the saved optimizer and scheduler
  states would otherwise bring the old rate back.
- With ``last_dir`` set, the weights of the last step are saved there before the best dev checkpoint
  replaces them: the model the authors' stage 2 continues (``lora_path`` is stage 1's output folder,
  written at its last step; Pcc-tuning ``tune.py``), when a stage's ``init`` is ``final``.
- With ``own_lengths`` set, every save (checkpoints, ``last``) keeps the model's own input lengths, not the
  stage's training cut (``pcctune.training.lengths``).
- The model card's widget examples are drawn without a progress bar (``pcctune.training.card_widget``).
- A callback's own checkpoint files (``CheckpointWriter``: a loss's parameters, the stage's cost so far) are written
  before the trainer state, whose file marks a checkpoint complete (``pcctune.training.checkpoints.is_complete``):
  as ``on_save`` callbacks they came after it (and after old checkpoints were deleted), so a process killed between
  left a "complete" checkpoint a resume could not continue.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.base.modules import Module
from sentence_transformers.util import fullname
from typing_extensions import override

from pcctune.distributed import is_main_process
from pcctune.errors import PcctuneError
from pcctune.modeling.quantization import linear_4bit_layers
from pcctune.modeling.saving import save_model
from pcctune.training.card_widget import QuietWidgetCallback
from pcctune.training.lengths import InputLengths, input_lengths


@runtime_checkable
class CheckpointWriter(Protocol):
    """A callback that keeps files of its own in every checkpoint."""

    def write_checkpoint(self, folder: Path) -> None:
        """Write this callback's state into the checkpoint ``folder``."""


class PcctuneTrainer(SentenceTransformerTrainer):
    """sentence-transformers' trainer with the behaviours this module's docstring lists changed for pcctune's runs."""

    model_card_callback_class = QuietWidgetCallback
    last_dir: Path | None = None
    """Where the last step's model is saved before the best checkpoint is loaded (None: not kept)."""
    own_lengths: InputLengths | None = None
    """The model's own input lengths, which every save keeps (the stage's cut applies to training only)."""

    def _own_lengths(self) -> AbstractContextManager[Any]:
        return nullcontext() if self.own_lengths is None else input_lengths(self.model, self.own_lengths)

    @override
    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        with self._own_lengths():
            super().save_model(output_dir, _internal_call)

    def _save_rng_state(self, output_dir: str) -> None:
        """The last write of a checkpoint before its trainer state: the callbacks' own files go here too
        (``CheckpointWriter``)."""
        super()._save_rng_state(output_dir)
        if self.args.should_save:
            for callback in self.callback_handler.callbacks:
                if isinstance(callback, CheckpointWriter):
                    callback.write_checkpoint(Path(output_dir))

    def _load_best_model(self) -> None:
        checkpoint = self.state.best_model_checkpoint
        if not checkpoint:
            return
        if self.last_dir is not None and is_main_process():
            with self._own_lengths():
                save_model(self.model, self.last_dir)
        try:
            self._load_from_checkpoint(checkpoint)
        except Exception as error:
            raise PcctuneError(f"could not load the best dev checkpoint {checkpoint}: {error}") from error

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        scheduler: Any = self.lr_scheduler
        optimizer = self.optimizer
        if checkpoint is None or optimizer is None or not hasattr(scheduler, "lr_lambdas"):
            return
        peak = self.args.learning_rate
        scheduler.base_lrs = [peak for _ in scheduler.base_lrs]
        for group, factor in zip(optimizer.param_groups, scheduler.lr_lambdas, strict=True):
            group["initial_lr"] = peak
            group["lr"] = peak * factor(scheduler.last_epoch)
        scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]  # what the trainer logs

    def _load_from_checkpoint(self, checkpoint_path: str, model: Any = None) -> None:
        model = getattr(self.model, "_orig_mod", self.model) if model is None else model
        if not linear_4bit_layers(model):
            super()._load_from_checkpoint(checkpoint_path)
            return
        classes = {fullname(module): type(module) for module in model.modules() if isinstance(module, Module)}
        saved = model.__class__._load_with_module_classes(
            checkpoint_path, classes, trust_remote_code=model.trust_remote_code
        )
        state = saved.state_dict()
        trainable = [name for name, parameter in model.named_parameters() if parameter.requires_grad]
        missing = [name for name in trainable if name not in state]
        if missing:
            raise PcctuneError(f"{checkpoint_path} lacks trainable weights ({missing[0]} …)")
        model.load_state_dict({name: state[name] for name in trainable}, strict=False)
