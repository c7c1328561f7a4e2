"""The first build of stage 1, kept beside the records so that every stage-2 run continues that one model.

Stage 1 takes about an hour of a 2-core CPU, and the run folders it leaves are not kept between machines. A stage 1
built again elsewhere is another model that at best scores alike, and the search and each seed's three losses must
continue one build (``design.check_one_build``). So the first build's saved model (its LoRA adapter, about 78 MB of
float32, and the files that load it) is kept in the claim's folder (:func:`kept_model`) with the digest of the base
weights it was trained on (:data:`BASE_FILE`); a machine without stage 1 in its run folders lays the kept model
there (:func:`bring`) instead of training stage 1 again: the same bytes, so the same build
(``design.stage1_digest``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from reproductions.decoder_losses import design

from pcctune.modeling.adapters import adapter_base, name_adapter_base
from pcctune.modeling.build import resolve_source
from pcctune.results import RunResult

BASE_FILE = "base.json"
"""Beside the kept model: the base model it continues, as the recipe names it, and the digest of that base's
weights (``design.weights_digest``), checked before the kept adapter is put on another machine's base."""
LEFT_OUT = ("README.md",)
"""Files of the saved model not kept: its model card, which names this machine's paths and is written anew."""


def kept_folder(args: argparse.Namespace) -> Path:
    return Path(args.output) / "stage1"


def kept_model(args: argparse.Namespace) -> Path:
    return kept_folder(args) / "model"


def base_of(model: Path) -> Path:
    """The base folder a saved LoRA model's adapter names."""
    base = adapter_base(model)
    if base is None:
        raise SystemExit(f"{model} holds no LoRA adapter naming its base: it is no stage 1 of this claim")
    return Path(base)


def keep(args: argparse.Namespace) -> None:
    """Keep this machine's finished first build of stage 1: its saved model and its base's digest."""
    model, target = design.stage1_model(args), kept_model(args)
    shutil.rmtree(kept_folder(args), ignore_errors=True)
    shutil.copytree(model, target, ignore=shutil.ignore_patterns(*LEFT_OUT))
    base = {"model": design.stage1_config(args).model, "weights_sha256": design.weights_digest(base_of(model))}
    (kept_folder(args) / BASE_FILE).write_text(json.dumps(base, indent=2) + "\n", encoding="utf-8")


def bring(args: argparse.Namespace) -> bool:
    """Lay the kept first build into this machine's run folders where they lack stage 1: its saved model, its
    adapter put on this machine's copy of the base (refused unless the base's weights are the same), and the first
    build's record as the run's result. False where nothing is kept or stage 1 is already here."""
    first = design.records(args) / "stage1.json"
    if design.stage1_built(args) or not (kept_model(args) / "modules.json").is_file() or not first.is_file():
        return False
    wanted = json.loads((kept_folder(args) / BASE_FILE).read_text(encoding="utf-8"))
    base = Path(resolve_source(wanted["model"]).path)
    if design.weights_digest(base) != wanted["weights_sha256"]:
        raise SystemExit(
            f"the kept stage 1 ({kept_model(args)}) was trained on other weights of {wanted['model']} than this "
            f"machine's ({base}): its stage-2 runs would continue another model. Install the versions its record "
            "names, or build stage 1 here (move the kept folder away) and run the stage-2 runs again."
        )
    model, result = design.stage1_model(args), design.stage1_folder(args) / "results.json"
    result.unlink(missing_ok=True)  # stage 1 counts as here only once the model is whole (``design.stage1_built``)
    staging = model.with_name(f"{model.name}.bringing")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(kept_model(args), staging)
    name_adapter_base(staging, str(base))
    shutil.rmtree(model, ignore_errors=True)
    os.replace(staging, model)
    RunResult.from_disk(first).to_disk(result)  # written whole or not at all, after the model
    return True
