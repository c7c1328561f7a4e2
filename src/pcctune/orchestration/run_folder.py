"""The rules that keep a run folder safe.

- A folder that holds a run (``run.json``) is never trained into again without ``--overwrite``
  (start afresh) or ``--resume`` (continue it); a folder that holds other files and no run is never trained
  into, so ``--overwrite`` empties only a run's folder.
- ``--resume`` continues only the run that the folder holds: the fingerprint of the
  run-defining settings (``config_fingerprint``) must match the one
  saved there; settings that do not change results (where it writes, how often it logs) may differ.
  A run saved before a setting existed continues too: its ``config.yaml``, read with today's
  settings (the new one at its default, which keeps the behaviour from before it existed), must
  give the resumed config's fingerprint.
- An unfinished run resumes only on as many processes as it started on (``run.json``'s ``world_size``; a marker
  written before it was kept does not say, and is not checked): each process's batch share, the data it reads and
  its random draws depend on it.
- Nothing is written until the config, the data and the model source have been validated; the
  first write is ``run.json`` and ``config.yaml``, both atomic.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from pcctune.cache_entry import locked
from pcctune.distributed import launched_world_size
from pcctune.errors import PcctuneError
from pcctune.io import check_output_folder, write_json
from pcctune.training.checkpoints import CHECKPOINTS, FINAL, checkpoint_name
from pcctune.training.config import RunConfig, config_fingerprint, dump_config, load_config

logger = logging.getLogger(__name__)

RUN_MARKER = "run.json"
RUN_CONFIG = "config.yaml"
"""The run's config as it ran (``--set`` applied): what ``--resume`` and ``export`` read back."""
LOCK = ".lock"
"""Held by the process that trains or evaluates into the folder: its pid, host and start time."""
RESULTS = "results.json"
PARTIAL_RESULTS = "results.partial.json"
"""What an unfinished run has recorded so far (finished stages, test evaluations): kept by ``--resume``."""


def _saved_marker(out: Path) -> dict[str, Any] | None:
    marker = out / RUN_MARKER
    if not marker.is_file():
        return None
    try:
        saved = json.loads(marker.read_text(encoding="utf-8"))
        if not isinstance(saved, dict) or not isinstance(saved.get("fingerprint"), str):
            raise ValueError("no fingerprint")
        return saved
    except ValueError:
        raise PcctuneError(f"{marker} is damaged; move the folder away or pass --overwrite") from None


def _same_run(saved: dict[str, Any], config: RunConfig) -> bool:
    """The folder's run is ``config``'s; after a non-finite stop, up to its optimisation settings."""
    recovery = bool(saved.get("stopped_nonfinite"))
    wanted = config_fingerprint(config, recovery=recovery)
    if saved.get("recovery_fingerprint" if recovery else "fingerprint") == wanted:
        return True
    return _saved_config_fingerprint(Path(config.output_dir), recovery) == wanted


def _saved_config_fingerprint(out: Path, recovery: bool) -> str | None:
    """The fingerprint of the folder's ``config.yaml`` under today's settings (``None`` if it cannot be read)."""
    try:
        return config_fingerprint(load_config(out / RUN_CONFIG, in_place=False), recovery=recovery)
    except PcctuneError:
        return None


def _marker(config: RunConfig, **extra: Any) -> dict[str, Any]:
    return {
        "fingerprint": config_fingerprint(config),
        "recovery_fingerprint": config_fingerprint(config, recovery=True),
        "world_size": launched_world_size(),
        **extra,
    }


def mark_nonfinite_stop(config: RunConfig, stage: str, step: int) -> None:
    """Record in the folder's marker that a stage stopped on a non-finite loss: ``--resume`` may then change
    its learning rate, warm-up or ``on_nonfinite``."""
    write_json(_marker(config, stopped_nonfinite={"stage": stage, "step": step}), Path(config.output_dir) / RUN_MARKER)


def is_empty(out: Path) -> bool:
    """True when ``out`` is missing or holds nothing but a run lock."""
    return not out.exists() or all(item.name == LOCK for item in out.iterdir())


def holds_a_run(out: Path) -> bool:
    """True when ``out`` holds a pcctune run: its marker, the first file a run writes (a ``config.yaml`` or
    ``results.json`` alone may be the user's own)."""
    return (out / RUN_MARKER).exists()


def is_run_of(config: RunConfig) -> bool:
    """Whether ``config.output_dir`` holds ``config``'s run (its marker's fingerprint), which ``--resume`` may
    continue or read back; a damaged marker is not."""
    try:
        saved = _saved_marker(Path(config.output_dir))
    except PcctuneError:
        return False
    return saved is not None and _same_run(saved, config)


def check_run_folder(config: RunConfig, resume: bool, overwrite: bool) -> None:
    """Refuse to touch a folder that holds another run (or this run, without --resume). Writes nothing."""
    out = check_output_folder(config.output_dir, "output_dir")
    if not holds_a_run(out) and not is_empty(out):
        raise PcctuneError(
            f"output_dir {out} holds other files and no pcctune run; give a new or empty folder "
            "(--overwrite replaces only a run)"
        )
    if overwrite or not holds_a_run(out):
        if resume and not holds_a_run(out):
            raise PcctuneError(f"nothing to resume in {out}: no run there (drop --resume to start one)")
        return
    if not resume:
        state = "a finished run" if (out / RESULTS).is_file() else "an unfinished run"
        raise PcctuneError(f"{out} holds {state}; pass --resume to continue it or --overwrite to replace it")
    saved = _saved_marker(out)
    if saved is None or not _same_run(saved, config):
        raise PcctuneError(
            f"{out} holds a run with other settings; --resume continues only the same run "
            f"(compare with {out / 'config.yaml'}), or use another output_dir or --overwrite"
        )
    started_on, now = saved.get("world_size"), launched_world_size()
    if started_on is not None and started_on != now and not (out / RESULTS).is_file():
        raise PcctuneError(
            f"{out} holds a run started on {started_on} process(es), resumed on {now}: resume it on {started_on} "
            "(each process's batch share, data and random draws depend on their number), or --overwrite"
        )


def start_run_folder(config: RunConfig, overwrite: bool) -> Path:
    """Empty the folder for --overwrite, then write ``run.json`` and ``config.yaml`` (after validation)."""
    out = Path(config.output_dir)
    if overwrite and holds_a_run(out):
        for item in out.iterdir():  # everything but the lock this process holds
            if item.name != LOCK:
                shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
    saved = _saved_marker(out)
    if saved is None or saved.get("stopped_nonfinite"):  # a new run, or a recovery under its new settings
        write_json(_marker(config), out / RUN_MARKER)
        dump_config(config, out / RUN_CONFIG)
    return out


def discard_if_nothing_to_resume(out: Path) -> None:
    """Remove a run folder this command created when it failed before any checkpoint or stage was saved."""
    saved = any(out.glob(f"stage*/{CHECKPOINTS}/{checkpoint_name('*')}")) or any(out.glob(f"stage*/{FINAL}"))
    if not saved:
        shutil.rmtree(out, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


@contextlib.contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold ``out/.lock`` while a run writes into ``out``: a second process gets one clear error naming the
    holder; a lock file left by a dead process on this host is taken over with a warning. The file is also a
    ``filelock``, so two processes starting at once cannot both take it."""
    out.mkdir(parents=True, exist_ok=True)
    lock = out / LOCK
    mine = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    guard = FileLock(lock)
    try:
        guard.acquire(timeout=0)
    except Timeout:
        raise _in_use(out, lock, _lock_holder(lock)) from None
    holder = _lock_holder(lock) if lock.stat().st_size else None
    if holder is not None:  # left by a process that has ended, or one that does not take the filelock
        if holder.get("host") != mine["host"] or _alive(int(holder.get("pid", -1))):
            guard.release()
            raise _in_use(out, lock, holder)
        logger.warning("taking over %s: its process %s has ended", lock, holder.get("pid"))
    with locked(guard):
        lock.write_text(json.dumps(mine), encoding="utf-8")  # in place: the filelock stays on this file
        yield


def _in_use(out: Path, lock: Path, holder: dict[str, Any]) -> PcctuneError:
    return PcctuneError(
        f"{out} is in use by process {holder.get('pid', '?')} on {holder.get('host', '?')} since "
        f"{holder.get('started', '?')}; wait for it, or remove {lock} if that process is gone"
    )


def _lock_holder(lock: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(lock.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return {"pid": -1, "host": socket.gethostname()}  # unreadable: treated as left by a dead process
