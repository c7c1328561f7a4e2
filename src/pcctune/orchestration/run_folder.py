"""The rules that keep a run folder safe.

- A folder that holds a run (``run.json``) is never trained into again without ``--overwrite``
  (start afresh) or ``--resume`` (continue it).
- ``--resume`` continues only the run that the folder holds: the fingerprint of the
  run-defining settings (:func:`~pcctune.training.config.config_fingerprint`) must match the one
  saved there; settings that do not change results (where it writes, how often it logs) may differ.
- Nothing is written until the config, the data and the model source have been validated; the
  first write is ``run.json`` and ``config.yaml``, both atomic.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pcctune.errors import PcctuneError
from pcctune.io import write_json
from pcctune.training.config import RunConfig, config_fingerprint, dump_config

MARKER = "run.json"
RESULTS = "results.json"


def _saved_fingerprint(out: Path) -> str | None:
    marker = out / MARKER
    if not marker.is_file():
        return None
    try:
        return str(json.loads(marker.read_text(encoding="utf-8"))["fingerprint"])
    except (ValueError, KeyError, TypeError):
        raise PcctuneError(f"{marker} is damaged; move the folder away or pass --overwrite") from None


def holds_a_run(out: Path) -> bool:
    """True when ``out`` holds (part of) a pcctune run: its marker, config or results."""
    return any((out / name).exists() for name in (MARKER, RESULTS, "config.yaml"))


def check_run_folder(config: RunConfig, resume: bool, overwrite: bool) -> None:
    """Refuse to touch a folder that holds another run (or this run, without --resume). Writes nothing."""
    out = Path(config.output_dir)
    if out.exists() and not out.is_dir():
        raise PcctuneError(f"output_dir {out} is a file, not a folder")
    if overwrite or not holds_a_run(out):
        if resume and not holds_a_run(out):
            raise PcctuneError(f"nothing to resume in {out}: no run there (drop --resume to start one)")
        return
    if not resume:
        state = "a finished run" if (out / RESULTS).is_file() else "an unfinished run"
        raise PcctuneError(f"{out} holds {state}; pass --resume to continue it or --overwrite to replace it")
    saved = _saved_fingerprint(out)
    if saved is None:
        raise PcctuneError(f"{out} has no {MARKER}, so --resume cannot check that it is this run; pass --overwrite")
    if saved != config_fingerprint(config):
        raise PcctuneError(
            f"{out} holds a run with other settings; --resume continues only the same run "
            f"(compare with {out / 'config.yaml'}), or use another output_dir or --overwrite"
        )


def start_run_folder(config: RunConfig, overwrite: bool) -> Path:
    """Empty the folder for --overwrite, then write ``run.json`` and ``config.yaml`` (after validation)."""
    out = Path(config.output_dir)
    if overwrite and holds_a_run(out):
        shutil.rmtree(out)
    if not (out / MARKER).is_file():
        write_json({"fingerprint": config_fingerprint(config)}, out / MARKER)
        dump_config(config, out / "config.yaml")
    return out


def discard_if_nothing_to_resume(out: Path) -> None:
    """Remove a run folder this command created when it failed before any checkpoint or stage was saved."""
    saved = any(out.glob("stage*/checkpoints/checkpoint-*")) or any(out.glob("stage*/final"))
    if not saved:
        shutil.rmtree(out, ignore_errors=True)
