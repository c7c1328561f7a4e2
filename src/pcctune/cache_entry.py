"""Verified cache entries: folders pcctune keeps between commands, checked on every use, built by one process.

An entry is a folder under ``cache_root`` (``KIND/NAME``) whose last file, written atomically
once everything else is in place, is its manifest (``MANIFEST``): what made it, when, and the size and sha256
of every other file. ``damage`` reads every file in full against it, so an entry cut short by a full disk,
changed by hand, left half-built by a kill or made by an older pcctune is found out; ``cached_folder`` then
sets it aside with one warning naming it and builds it again.

Builders take the entry's file lock (``entry_lock``, a ``filelock`` beside the entry): two processes asking
for the same entry at once build it once, the second waits and uses the first's. Entries whose files change while
they are used (resume stores) carry a manifest with no files and verify their own data
(``VectorStore``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from pcctune.errors import PcctuneError
from pcctune.io import atomic_folder, write_json, written_in_place
from pcctune.paths import cache_root
from pcctune.provenance import file_sha256

logger = logging.getLogger(__name__)

RESUME = "resume"
"""The kind of the entries that hold an unfinished command's state (kept vectors, scored candidates)."""
LOCKS = ".locks"
MANIFEST = "pcctune-entry.json"
FORMAT = 1


def entry_lock(path: Path) -> FileLock:
    """The lock of the entry (or any path) at ``path``: a hidden file beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path.parent / f".{path.name}.lock")


@contextlib.contextmanager
def locked(lock: FileLock) -> Iterator[None]:
    """Hold an acquired ``lock`` until the block ends, then remove its file and release it (a process waiting on
    the removed file sees it unlinked and takes a new one: ``filelock`` checks the link count)."""
    try:
        yield
    finally:
        Path(lock.lock_file).unlink(missing_ok=True)
        lock.release()


@contextlib.contextmanager
def held(path: Path, busy: str) -> Iterator[None]:
    """Hold ``path``'s lock; when another process holds it, log ``busy`` once and wait for it."""
    lock = entry_lock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        logger.warning(busy)
        lock.acquire()
    with locked(lock):
        yield


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_manifest(folder: Path, made_by: str, *, files: bool = True, source: str | None = None) -> Path:
    """Write ``folder``'s manifest (last, atomically): ``made_by`` (a line a person reads in ``pcctune cache
    list``), the time, the ``source`` it was made from (a digest), and with ``files`` the size and sha256 of every
    file in the folder."""
    listed = {str(p.relative_to(folder)): {"size": p.stat().st_size, "sha256": file_sha256(p)} for p in _files(folder)}
    record = {
        "format": FORMAT,
        "made_by": made_by,
        "source": source,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": listed if files else None,
    }
    return write_json(record, folder / MANIFEST)


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the entry ``folder``; ``None`` when it has none or it cannot be read."""
    try:
        record = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("format") == FORMAT else None


def damage(folder: Path, source: str | None = None) -> str | None:
    """Why the entry ``folder`` cannot be trusted (``None``: it is whole): no manifest, made from another
    ``source`` (when given), or a file missing, of another size or with other bytes than the manifest lists, or a
    file the manifest does not list."""
    if not folder.is_dir():
        return "missing"
    record = read_manifest(folder)
    if record is None:
        return f"no readable {MANIFEST} (left half-built, or made by an older pcctune)"
    if source is not None and record.get("source") != source:
        return "made from another source"
    listed = record.get("files")
    if not isinstance(listed, dict):
        return f"{MANIFEST} lists no files"
    present = {str(p.relative_to(folder)) for p in _files(folder)}
    if extra := sorted(present - set(listed)):
        return f"{extra[0]} is not in its manifest"
    for name, expected in listed.items():
        path = folder / name
        try:
            if path.stat().st_size != expected["size"]:
                return f"{name} has {path.stat().st_size} bytes, not {expected['size']}"
            if file_sha256(path) != expected["sha256"]:
                return f"{name} does not match its sha256"
        except (OSError, KeyError, TypeError) as error:
            return f"{name}: {error}"
    return None


def set_aside(path: Path, reason: str) -> None:
    """Remove the damaged, foreign or stale entry ``path`` with one warning naming it and why."""
    logger.warning("setting aside %s (%s); it is made again", path, reason)
    remove(path)


def remove(path: Path) -> None:
    """Delete an entry (folder or file); missing is fine.

    A folder is first renamed aside in one step (to a hidden ``.NAME.RANDOM.tmp`` sibling, which ``pcctune cache
    clear`` removes if a kill leaves it), then deleted: a process reading the entry without its lock finds it
    whole or gone, never half deleted."""
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)
        return
    aside = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.rename(aside)
    except FileNotFoundError:  # another process removed it first
        return
    except OSError:  # it cannot be renamed (a read-only parent, say): deleted in place, as far as it can be
        aside = path
    shutil.rmtree(aside, ignore_errors=True)


def cached_folder(folder: Path, build: Callable[[Path], object], made_by: str, source: str | None = None) -> Path:
    """``folder``, verified (``damage``, against ``source`` when given); when missing, damaged or made from
    another source, built again by ``build(staging)`` into a temporary sibling that becomes ``folder`` with its
    manifest, under the entry's lock."""
    if damage(folder, source) is None:
        return folder
    with held(folder, f"waiting for another process building {folder}"):
        why = damage(folder, source)
        if why is None:  # another process built it while this one waited
            return folder
        if why != "missing":
            set_aside(folder, why)
        started = time.monotonic()
        with atomic_folder(folder) as staging:
            build(staging)
            write_manifest(staging, made_by, source=source)
        logger.info("built %s in %.1f s", folder, time.monotonic() - started)
    return folder


def _try_lock(path: Path) -> FileLock | str:
    """``path``'s lock, acquired; else why not: ``"busy"`` (another process holds it) or the error."""
    try:
        lock = entry_lock(path)
        lock.acquire(timeout=0)
    except Timeout:
        return "busy"
    except OSError as error:
        return str(error)
    return lock


def _open_resume_folder(folder: Path, made_by: str) -> str | None:
    """Give ``folder`` its manifest (when new); why it cannot be used, else ``None``."""
    try:
        if read_manifest(folder) is None:
            folder.mkdir(parents=True, exist_ok=True)
            write_manifest(folder, made_by, files=False)
    except (OSError, PcctuneError) as error:
        return str(error)
    return None


@contextlib.contextmanager
def resume_folder(name: str, made_by: str) -> Iterator[Path | None]:
    """The cache folder ``resume/NAME`` for the state of one unfinished command, held by this process while the
    block runs. ``None`` (no resume point, the command goes on) when another process holds it or the cache cannot
    be written. The caller removes it (``remove``) once its command has finished."""
    folder = cache_root() / RESUME / name
    lock = _try_lock(folder)
    if isinstance(lock, str):
        why = "another process runs the same command" if lock == "busy" else lock
        logger.warning("no resume point for this command (%s)", why)
        yield None
        return
    with locked(lock):
        unusable = _open_resume_folder(folder, made_by)
        if unusable is not None:
            logger.warning("no resume point for this command (%s)", unusable)
        yield None if unusable else folder


@contextlib.contextmanager
def writing(path: Path, what: str = "--output") -> Iterator[None]:
    """Hold the lock of ``path`` (a file or folder a command writes) for the whole command: a second command
    writing the same path at once stops before any work with one clear error. Standard output, devices and pipes
    are not locked; without a writable cache the command goes on unlocked."""
    if written_in_place(path):
        yield
        return
    lock = _try_lock(cache_root() / LOCKS / hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24])
    if lock == "busy":
        raise PcctuneError(
            f"{what} {path} is being written by another pcctune command; wait for it to finish or choose another {what}"
        )
    if isinstance(lock, str):
        logger.warning("cannot lock %s against other commands: %s", path, lock)
        yield
        return
    with locked(lock):
        yield
