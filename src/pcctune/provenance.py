"""What produced a result: content hashes of data files and the versions of the libraries."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
from collections.abc import Iterable
from pathlib import Path

LIBRARIES = ("pcctune", "torch", "transformers", "sentence-transformers", "peft", "accelerate", "scipy", "numpy")


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def file_hashes(paths: Iterable[Path], root: Path | None = None) -> dict[str, str]:
    """SHA-256 of each file, named relative to ``root`` (the data folder) where it lies under it, relative to the
    folder holding ``root`` where it lies beside it (``senteval-tokenized/…``, the paper protocol's copy) and by its
    file name elsewhere: a record names its files without the machine's absolute paths."""
    return {_portable_name(Path(path), root): file_sha256(path) for path in sorted(set(paths))}


def _portable_name(path: Path, root: Path | None) -> str:
    if root is not None:
        resolved, home = path.resolve(), root.resolve()
        for folder in (home, home.parent):
            if resolved.is_relative_to(folder):
                return resolved.relative_to(folder).as_posix()
    return path.as_posix() if not path.is_absolute() else path.name


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
