"""Will a stage's checkpoints fit the disk? Checked before training, not found out mid-run.

A checkpoint holds the weights the model saves (a LoRA adapter alone, else every parameter), the
AdamW state (two fp32 moments per trainable parameter), and small trainer files. The trainer keeps
``save_total_limit`` of them (the best dev checkpoint is never deleted), or every one without a limit;
the stage then writes its ``final`` model and, when a next stage continues the last step, its ``last``
model. The authors' scripts keep up to 100 checkpoints (``save_total_limit=100`` in Pcc-tuning's
``tune.py``); a 7B run of pcctune without a limit would write about 60 GB.
"""

from __future__ import annotations

import math
from pathlib import Path

from sentence_transformers import SentenceTransformer

from pcctune.errors import PcctuneError
from pcctune.io import free_bytes

ADAM_MOMENTS = 2
FP32_BYTES = 4


def human(size: int) -> str:
    """A byte count as MB below a gigabyte, else GB."""
    return f"{size / 1024**2:.1f} MB" if size < 1024**3 else f"{size / 1024**3:.2f} GB"


def saved_weight_bytes(model: SentenceTransformer) -> int:
    """Bytes of the weights a save writes: the trainable ones of an adapter model, else all parameters."""
    parameters = list(model.parameters())
    if getattr(model[0].model, "peft_config", None):
        parameters = [p for p in parameters if p.requires_grad]
    return sum(p.numel() * p.element_size() for p in parameters)


def checkpoint_bytes(model: SentenceTransformer) -> int:
    """Estimated size of one trainer checkpoint: saved weights and AdamW's moments."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return saved_weight_bytes(model) + ADAM_MOMENTS * FP32_BYTES * trainable


def checkpoints_kept(total_steps: int, save_steps: int, save_total_limit: int | None, selects: bool) -> int:
    """How many checkpoints can be on disk at once (the best one survives the limit)."""
    saves = max(1, math.ceil(total_steps / save_steps))
    if save_total_limit is None:
        return saves
    return min(saves, max(save_total_limit, 2 if selects else 1))


def check_disk(model: SentenceTransformer, folder: Path, kept: int, extra_models: int) -> None:
    """Refuse to start a stage whose ``kept`` checkpoints and ``extra_models`` saved models exceed the free space."""
    needed = kept * checkpoint_bytes(model) + extra_models * saved_weight_bytes(model)
    free = free_bytes(folder)
    if needed > free:
        raise PcctuneError(
            f"{folder}: the stage's checkpoints need about {human(needed)} ({kept} checkpoints of "
            f"{human(checkpoint_bytes(model))} and {extra_models} saved models), but only "
            f"{human(free)} are free: lower save_total_limit, raise eval_steps or free space"
        )
