"""What produced a result: content hashes of data files and the versions of the libraries."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
from collections.abc import Iterable
from functools import cache
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
    """The versions of Python and of `LIBRARIES`, and the ``device`` the numbers were computed on."""
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions | {"device": compute_device()}


def compute_device() -> str:
    """Where torch computes: ``cuda: <the GPU's name>`` when it sees a GPU, else ``cpu: <the CPU's model name>``, so
    a record or cache entry says which kind of kernels made its numbers."""
    import torch

    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)}"
    return f"cpu: {cpu_model_name()}"


@cache
def cpu_model_name() -> str:
    """The CPU's model name as ``lscpu`` gives it (``/proc/cpuinfo`` on Linux), else `platform.processor`; read
    once per process."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"
