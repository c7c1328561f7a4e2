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


def file_hashes(paths: Iterable[Path]) -> dict[str, str]:
    return {str(path): file_sha256(path) for path in sorted(set(paths))}


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
