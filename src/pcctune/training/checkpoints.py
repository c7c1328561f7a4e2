"""Which checkpoint a resumed stage continues from: the last *complete* one.

transformers' ``get_last_checkpoint`` takes the highest-numbered ``checkpoint-N`` folder, so a
kill while a checkpoint is being written leaves a half-written folder that ``--resume`` then
crashes on. A checkpoint is complete when the trainer has written its state, its RNG state and
the model weights; incomplete ones are skipped (and named, so the user knows).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from pcctune.io import write_text
from pcctune.modeling.adapters import ADAPTER_WEIGHTS
from pcctune.modeling.prefix import PROMPTS_FILE

logger = logging.getLogger(__name__)

FINAL = "final"
"""The folder of a stage's finished model: the dev-best where dev selection ran, else the last step's."""
CHECKPOINTS = "checkpoints"
"""The folder in a stage's folder where the trainer writes its ``checkpoint-N`` folders (its ``output_dir``)."""
CHECKPOINT = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")
"""A trainer checkpoint's folder name, ``checkpoint-N``; group 1 is its step N."""
TRAINER_STATE = "trainer_state.json"
"""The file that makes a folder a trainer checkpoint (its step, its dev scores so far)."""
REQUIRED = (TRAINER_STATE, "optimizer.pt", "scheduler.pt")
WEIGHTS = ("model.safetensors", ADAPTER_WEIGHTS, "pytorch_model.bin", PROMPTS_FILE)


def checkpoint_name(step: int | str) -> str:
    """The folder name the trainer gives its checkpoint at ``step`` (``checkpoint-N``; ``"*"``: a glob of them all)."""
    return f"{PREFIX_CHECKPOINT_DIR}-{step}"


def is_complete(folder: Path) -> bool:
    """True when ``folder`` holds the trainer state, optimizer, scheduler and some model weights."""
    if not all((folder / name).is_file() and (folder / name).stat().st_size > 0 for name in REQUIRED):
        return False
    return any(path.name in WEIGHTS for path in folder.rglob("*") if path.is_file() and path.stat().st_size > 0)


def checkpoints(folder: Path) -> list[Path]:
    """``checkpoint-N`` folders of ``folder``, by step."""
    if not folder.is_dir():
        return []
    found = [
        (int(match.group(1)), path)
        for path in folder.iterdir()
        if path.is_dir() and (match := CHECKPOINT.match(path.name))
    ]
    return [path for _, path in sorted(found)]


def drop_checkpoints_after(folder: Path, kept: str | None) -> None:
    """Delete the checkpoints of ``folder`` past ``kept`` (``…/checkpoint-N``; ``None``: every one): a run continued
    from an earlier checkpoint, or from another earlier stage, leaves none of the abandoned run's steps for a later
    resume to pick up."""
    match = CHECKPOINT.match(Path(kept).name) if kept else None
    for path in checkpoints(folder):
        found = CHECKPOINT.match(path.name)
        if found and (match is None or int(found.group(1)) > int(match.group(1))):
            shutil.rmtree(path)


def reroot_best_checkpoint(checkpoint: Path) -> None:
    """Point ``checkpoint``'s recorded best dev checkpoint at the folder beside it, found by its step.

    The trainer records the best checkpoint as a path. In a run folder moved since (another disk, another machine)
    that path is gone, and transformers drops it on resume; it finds the best again by its step at its next save, but
    a resume from the last checkpoint saves none, so the stage would end on the last step's weights instead of the
    best dev ones. Nothing changes where the folder of that step is not beside ``checkpoint``."""
    state_file = checkpoint / TRAINER_STATE
    state = json.loads(state_file.read_text(encoding="utf-8"))
    step, recorded = state.get("best_global_step"), state.get("best_model_checkpoint")
    here = checkpoint.resolve().parent / checkpoint_name(step) if step else None
    if recorded is None or here is None or not here.is_dir() or recorded == str(here):
        return
    state["best_model_checkpoint"] = str(here)
    write_text(state_file, json.dumps(state, indent=2, sort_keys=True) + "\n")  # as the trainer writes it


def last_complete_checkpoint(folder: Path) -> str | None:
    """The highest-step complete checkpoint of ``folder``; partial ones are skipped with a warning."""
    for path in reversed(checkpoints(folder)):
        if is_complete(path):
            return str(path)
        logger.warning("skipping incomplete checkpoint %s (a run killed while saving it)", path)
    return None


def best_at_last_evaluation(history: Sequence[dict[str, Any]], metric: str | None, best: str | None) -> bool | None:
    """Whether the dev-best checkpoint ``best`` (``…/checkpoint-N``) is the stage's last dev evaluation in the
    trainer's ``history`` (the rows holding ``metric``): its dev score may still have been rising, so a search that
    stopped it there has not seen where it peaks. ``None`` where the stage had no dev evaluation or kept no best."""
    steps = [row["step"] for row in history if metric is not None and metric in row]
    match = CHECKPOINT.match(Path(best).name) if best else None
    if not steps or match is None:
        return None
    return int(match.group(1)) == max(steps)
