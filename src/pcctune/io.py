"""Atomic writes: every file pcctune writes appears whole or not at all.

A write goes to a temporary file in the target's folder, is flushed to disk (``fsync``) and moved over
the target with ``os.replace``, which is atomic on POSIX and Windows; the folder is then synced too, so
that after a power cut the target holds the old bytes or the new ones, never an empty or half file. A
failure (disk full, size limit, a kill) leaves the previous file untouched and removes the temporary
one. Model folders are written the same way with ``atomic_folder``: into a sibling temporary folder
whose files and folders are synced, then swapped with the old folder in one step (``renameat2``'s
``RENAME_EXCHANGE`` on Linux, ``renamex_np``'s ``RENAME_SWAP`` on macOS; elsewhere the old folder is
renamed aside first, a moment in which the path is missing), the old one deleted after.

Only regular files and new paths are renamed over. ``-`` is standard output; a device, a FIFO or a
symlink to one (``/dev/stdout``, ``/dev/full``, a pipe) is written directly, never replaced; a symlink
to a regular file has its target written atomically and stays a link. A new file gets the mode the
umask gives (``0644`` under ``022``), not ``tempfile``'s ``0600``; an overwritten file keeps its mode.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import stat
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from pcctune.errors import PcctuneError

STDOUT = "-"


def written_in_place(path: Path) -> bool:
    """True for standard output and for an existing path that is not a regular file (a device, a FIFO, a link
    to one): these are written directly, never renamed over."""
    return str(path) == STDOUT or (path.exists() and not path.is_dir() and not path.resolve().is_file())


def free_bytes(folder: Path) -> int:
    """Free space of the file system that will hold ``folder`` (its nearest existing ancestor)."""
    existing = folder.resolve()
    while not existing.exists():
        existing = existing.parent
    return shutil.disk_usage(existing).free


def _new_file_mode() -> int:
    """The mode a new file gets under the process's umask. Read from ``/proc/self/status`` where Linux shows it:
    setting the umask to read it back changes it for every thread of the process for that moment."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
        umask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Umask:")), 8)
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0)
        os.umask(umask)
    return 0o666 & ~umask


def _write_directly(path: Path, write: Callable[[IO[bytes]], None]) -> Path:
    """Write into an existing non-regular file (or standard output) without replacing it."""
    try:
        if str(path) == STDOUT:
            write(sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            with path.open("wb") as handle:
                write(handle)
    except OSError as error:
        raise PcctuneError(f"could not write {path}: {error.strerror or error}") from None
    return path


def _atomic(path: str | Path, write: Callable[[IO[bytes]], None]) -> Path:
    path = Path(path)
    if written_in_place(path):
        return _write_directly(path, write)
    if path.is_symlink():  # a link to a regular file: write its target, keep the link
        path = path.resolve()
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _new_file_mode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    except OSError as error:
        raise PcctuneError(f"could not write {path}: {error.strerror or error}") from None
    try:
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, mode)
        os.replace(handle.name, path)
        sync_folder(path.parent)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(handle.name)
        if isinstance(error, OSError):
            kept = "the previous file is unchanged" if path.exists() else "nothing was written"
            raise PcctuneError(f"could not write {path}: {error.strerror or error}; {kept}") from None
        raise
    return path


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""

    def write(handle: IO[bytes]) -> None:
        handle.write(data)

    return _atomic(path, write)


def write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(payload: Any, path: str | Path) -> Path:
    """Indented UTF-8 JSON; non-finite floats are refused (JSON has no NaN or Infinity)."""
    return write_text(path, json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def write_yaml(payload: Any, path: str | Path) -> Path:
    """Block-style UTF-8 YAML, keys in the payload's order."""
    return write_text(path, yaml.safe_dump(payload, sort_keys=False, allow_unicode=True))


def write_jsonl(rows: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """One JSON object per line."""
    return write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def write_with(path: str | Path, save: Callable[[IO[bytes]], Any]) -> Path:
    """Atomically write whatever ``save(handle)`` writes to a binary handle (``np.save``, ``savefig``)."""

    def write(handle: IO[bytes]) -> None:
        save(handle)

    return _atomic(path, write)


def sync_folder(folder: Path) -> None:
    """Make the entries of ``folder`` (a file renamed into it, a new file) durable: ``fsync`` of the folder itself.
    Windows has no handle to sync a folder through; file systems that cannot sync one are skipped too."""
    if os.name == "nt":
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(handle)


def _sync_tree(folder: Path) -> None:
    """``fsync`` every file under ``folder``, then every folder, deepest first (their entries name the files)."""
    for root, _, files in os.walk(folder, topdown=False):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            handle = os.open(path, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
        sync_folder(Path(root))


_SWAP_FLAG = 2  # Linux renameat2's RENAME_EXCHANGE and macOS renamex_np's RENAME_SWAP
_AT_FDCWD = -100


def _swap(first: Path, second: Path) -> bool:
    """Exchange two existing paths in one step; ``False`` where the system or file system cannot."""
    if os.name != "posix":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = os.fsencode(first), os.fsencode(second)
    if hasattr(libc, "renameat2"):
        done = libc.renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _SWAP_FLAG)
    elif hasattr(libc, "renamex_np"):
        done = libc.renamex_np(a, b, _SWAP_FLAG)
    else:
        return False
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(second))


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_folder(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success its files are synced to disk and it replaces ``path`` in one
    step (see the module's docstring), the old folder deleted after; on failure ``path`` is kept as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield staging
        _sync_tree(staging)
        if not path.exists() and not path.is_symlink():
            staging.rename(path)
        elif not _swap(staging, path):  # on a swap the old folder is now at the staging name
            retired = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
            path.rename(retired)
            try:
                staging.rename(path)
            except BaseException:
                retired.rename(path)
                raise
            staging = retired
        sync_folder(path.parent)
    finally:
        _delete(staging)


def check_output_file(path: str | Path, what: str = "--output") -> Path:
    """Fail before any work when ``path`` cannot become a file: a folder there, or a file where a folder must be."""
    path = Path(path)
    if written_in_place(path):
        return path
    if path.is_dir():
        raise PcctuneError(f"{what} {path} is a folder; give a file name, e.g. {path / 'results.json'}")
    _check_place(path, path, what)
    return path


def _check_place(path: Path, shown: Path, what: str) -> None:
    """Fail where the nearest existing folder above ``path`` is a file or not writable; the error names ``shown``."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise PcctuneError(f"{what} {shown}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK):
                raise PcctuneError(f"{what} {shown}: cannot write in {parent}")
            return


def check_output_folder(path: str | Path, what: str = "--output") -> Path:
    """Fail before any work when ``path`` cannot become a folder."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise PcctuneError(f"{what} {path} is a file; give a folder")
    _check_place(path / "x", path, what)  # the folder itself, where it exists, or the nearest one above it
    return path
