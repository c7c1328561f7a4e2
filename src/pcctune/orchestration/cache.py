"""``pcctune cache list`` / ``pcctune cache clear``: what pcctune keeps between commands, and removing it.

Everything lives under ``cache_root`` as ``KIND/NAME`` entries (``pcctune.cache_entry``):
``gguf`` (dequantized GGUF files), ``packaged`` (unzipped packaged models), ``resume`` (the state of unfinished
evaluations and demonstration searches), ``hashes`` (model files' remembered sha256), and whatever other kinds later
commands add. In the spirit of
``huggingface-cli scan-cache`` and ``delete-cache``: a table of kind, name, size, age and what made each entry,
and removal of all of it or one kind. An entry another process is using (building it, resuming from it) is left
alone and reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout
from rich.table import Table

from pcctune.cache_entry import entry_lock, locked, read_manifest, remove
from pcctune.errors import PcctuneError
from pcctune.paths import CACHE_ENV, cache_root


@dataclass(frozen=True)
class CacheEntry:
    """One thing pcctune keeps: its kind (``gguf``, ``packaged``, ``resume``…), folder, size, age and maker."""

    kind: str
    path: Path
    size: int
    age_s: float
    made_by: str


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _entry(kind: str, path: Path) -> CacheEntry:
    manifest = read_manifest(path) if path.is_dir() else None
    made_by = str(manifest["made_by"]) if manifest else "unknown (no manifest: made by an older pcctune, or damaged)"
    return CacheEntry(kind, path, _size(path), time.time() - path.stat().st_mtime, made_by)


def kinds() -> list[str]:
    """The kinds of entry the cache holds now (a cache path that is a file is refused, not read as empty)."""
    root = cache_root()
    if root.exists() and not root.is_dir():
        raise PcctuneError(f"pcctune's cache {root} ({CACHE_ENV}) is a file; name a folder")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []


def list_entries(kind: str | None = None) -> list[CacheEntry]:
    """Every entry in the cache (of ``kind`` only, when given), kind by kind, newest first."""
    entries = []
    for name in [check_kind(kind)] if kind else kinds():
        folder = cache_root() / name
        found = [_entry(name, p) for p in folder.iterdir() if not p.name.startswith(".")]
        entries += sorted(found, key=lambda e: e.age_s)
    return entries


def check_kind(kind: str) -> str:
    """``kind`` when the cache holds entries of it; otherwise a clear error naming the kinds it holds."""
    present = kinds()
    if kind not in present:
        held = ", ".join(present) if present else "nothing"
        raise PcctuneError(f"the cache ({cache_root()}) holds no {kind!r} entries; it holds: {held}")
    return kind


def _leftovers(folder: Path) -> list[tuple[Path, str]]:
    """Staging folders a killed build left (``.NAME.RANDOM.tmp``), each with the entry name whose lock guards it."""
    return [(p, p.name[1:].rsplit(".", 2)[0]) for p in folder.glob(".*.tmp") if p.is_dir()]


def _remove_unless_busy(path: Path, guard: Path) -> bool:
    """Remove ``path`` when no process holds ``guard``'s entry lock; ``False`` when one does."""
    lock = entry_lock(guard)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return False
    with locked(lock):
        remove(path)
    return True


def clear_entries(kind: str | None) -> tuple[list[CacheEntry], list[CacheEntry]]:
    """Remove every entry (of ``kind``, when given): the removed ones and the ones in use by another process."""
    removed: list[CacheEntry] = []
    busy: list[CacheEntry] = []
    for entry in list_entries(kind):
        (removed if _remove_unless_busy(entry.path, entry.path) else busy).append(entry)
    for name in [kind] if kind else kinds():
        for staging, owner in _leftovers(cache_root() / name):
            _remove_unless_busy(staging, cache_root() / name / owner)
    return removed, busy


def human_size(size: int) -> str:
    """Bytes in decimal units: ``512 B``, ``1.5 MB``."""
    units = ("B", "KB", "MB", "GB", "TB")
    power = 0
    while power < len(units) - 1 and size >= 1000 ** (power + 1):
        power += 1
    return f"{size} B" if power == 0 else f"{size / 1000**power:.1f} {units[power]}"


def human_age(seconds: float) -> str:
    """An age in its largest whole unit: ``3 d``, ``5 h``, ``12 min``, ``40 s``."""
    for unit, span in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            return f"{seconds / span:.0f} {unit}"
    return f"{seconds:.0f} s"


def entries_table(entries: list[CacheEntry]) -> Table:
    """``pcctune cache list``'s table, with the total size in its title."""
    table = Table(title=f"pcctune cache at {cache_root()}: {human_size(sum(e.size for e in entries))}")
    for column in ("kind", "name", "size", "age", "made by"):
        table.add_column(column, justify="right" if column in ("size", "age") else "left")
    for e in entries:
        table.add_row(e.kind, e.path.name, human_size(e.size), human_age(e.age_s), e.made_by)
    return table
