"""A name a user gives for data: a local path or a Hub dataset id, told apart before anything is read.

A name is a local path when it ends in a pair file's extension (``.csv``, ``.tsv``, ``.jsonl``), starts with
``./``, ``../``, ``/`` or ``~``, names a file or folder that exists, or is a file's name without its extension
(``my_pairs`` beside ``my_pairs.csv``); anything else is a Hub dataset id. A local path that does not exist is one
clear error instead of a question to the Hub, and a folder is read only where it holds a data file within two levels
(the Hub's file layout: ``train.csv``, ``data/train-00000.parquet``), so a wrong folder is refused at once instead of
being scanned file by file.
"""

from __future__ import annotations

import os
from pathlib import Path

from pcctune.errors import PcctuneError

PAIR_FILE_SUFFIXES = (".csv", ".tsv", ".jsonl")
"""The files pcctune reads pairs from itself (``pcctune.data.pairs.read_pairs_file``)."""
DATA_FILE_SUFFIXES = (*PAIR_FILE_SUFFIXES, ".json", ".parquet", ".arrow")
"""The files a folder in the Hub's layout holds its rows in (read through ``datasets``)."""
PATH_PREFIXES = ("./", "../", "/", "~")
MAX_ENTRIES = 10_000
"""Entries looked at per folder level when searching a folder for a data file: the answer comes in well under a
second, whatever the folder holds."""


def pair_files_named(name: str) -> list[Path]:
    """The pair files ``name`` would be with an extension, those that exist."""
    return [Path(name + suffix) for suffix in PAIR_FILE_SUFFIXES if Path(name + suffix).is_file()]


def is_local(name: str) -> bool:
    """Whether ``name`` is a local path rather than a Hub dataset id (see the module's rules)."""
    return (
        Path(name).suffix.lower() in PAIR_FILE_SUFFIXES
        or name.startswith(PATH_PREFIXES)
        or Path(name).expanduser().exists()
        or bool(pair_files_named(name))
    )


def _holds_data_file(folder: Path, depth: int = 2) -> bool:
    """Whether ``folder`` or a folder under it, down to ``depth`` levels, holds a data file."""
    try:
        with os.scandir(folder) as entries:
            subfolders = []
            for count, entry in enumerate(entries):
                if count >= MAX_ENTRIES:
                    break
                if entry.is_file() and Path(entry.name).suffix.lower() in DATA_FILE_SUFFIXES:
                    return True
                if entry.is_dir() and not entry.name.startswith("."):
                    subfolders.append(Path(entry.path))
    except OSError:
        return False
    return depth > 1 and any(_holds_data_file(sub, depth - 1) for sub in subfolders)


def local_path(name: str | Path) -> Path | None:
    """``name`` as a local path (``None`` for a Hub dataset id; a ``Path`` is always local): one clear error where it
    does not exist, or where it is a folder holding no data file (``DATA_FILE_SUFFIXES``) within two levels."""
    if not isinstance(name, Path) and not is_local(name):
        return None
    path = Path(name).expanduser()
    if not path.exists():
        near = pair_files_named(str(name))
        hint = f"; did you mean {near[0]}?" if near else " (a local path, so no Hub dataset is looked up)"
        raise PcctuneError(f"missing file or folder: {name}{hint}")
    if path.is_dir() and not _holds_data_file(path):
        raise PcctuneError(
            f"{name}: a folder with no pair file in it ({', '.join(DATA_FILE_SUFFIXES)}, in it or one folder down); "
            "name a pair file, or a folder in the Hub's file layout"
        )
    return path


def local_data_files(path: Path, data_files: str | None = None) -> list[Path]:
    """The files a local ``hub`` source is read from: the file itself, the folder's ``data_files`` file, or every
    data file (``DATA_FILE_SUFFIXES``) in the folder and its folders that are not hidden; none where nothing is there
    (the read itself says so)."""
    if path.is_file():
        return [path]
    if data_files:
        return [path / data_files] if (path / data_files).is_file() else []
    return sorted(
        file
        for file in path.rglob("*")
        if file.is_file()
        and file.suffix.lower() in DATA_FILE_SUFFIXES
        and not any(part.startswith(".") for part in file.relative_to(path).parts)
    )
