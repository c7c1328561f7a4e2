"""What produced a result: content hashes of data files and the versions of the libraries."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pcctune.cpu_kind import this_cpu

LIBRARIES = (
    "pcctune",
    "torch",
    "transformers",
    "tokenizers",
    "sentence-transformers",
    "peft",
    "accelerate",
    "bitsandbytes",
    "scipy",
    "numpy",
)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in 4 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


SMALL_FILE = 1 << 20
"""Files up to this size (1 MiB: pair files, configs, source code) are read in full by ``file_state``."""
FileState = tuple[int, int, int, int, str | None]
"""A file's inode, size, modification and change times (ns), and its sha256 when it is small (``file_state``)."""


def file_state(path: Path) -> FileState | None:
    """What tells that a file changed, cheaply: its inode, size, modification and change times, and the sha256 of a
    small file's bytes (``SMALL_FILE``); ``None`` where it cannot be read. ``cp -p``, ``rsync -a`` and ``tar`` give a
    file back its old modification time, but a copy is another inode and any write moves the change time, which no
    tool sets; a small file's own bytes answer even a coarse clock. The one change detector of pcctune's
    in-process keys (``pcctune.paths.files_state``, ``code_digest``) and of the remembered hashes of model files."""
    try:
        stat = path.stat()
        content = file_sha256(path) if stat.st_size <= SMALL_FILE else None
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, content)


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
    versions = {"python": platform.python_version()} | {name: package_version(name) for name in LIBRARIES}
    return versions | {"device": compute_device()}


def package_version(name: str) -> str:
    """The installed version of the distribution ``name``; ``not installed`` where it is not."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def compute_device() -> str:
    """Where torch computes: ``cuda: <the GPU's name>`` when it sees a GPU, else ``cpu: <vendor, family, model,
    name and kernel flags>`` (`pcctune.cpu_kind.CPUKind.identity`), so a record or cache entry says which kind of
    kernels made its numbers: the model name alone says "AMD EPYC" for two kinds with different kernels."""
    import torch

    return device_name(torch.device("cuda" if torch.cuda.is_available() else "cpu"))


def device_name(device: Any) -> str:
    """The kind of device ``device`` (a ``torch.device``) is: ``cuda: <the GPU's name>``, ``cpu: <vendor, family,
    model, name and kernel flags>``, else its type (``mps``…). A model on the CPU of a GPU host computes on the CPU's
    kernels: its cache key names the device it runs on, not the host's first GPU."""
    import torch

    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    if device.type == "cpu":
        return f"cpu: {this_cpu().identity}"
    return str(device.type)


PACKAGE_ROOT = Path(__file__).resolve().parent
"""The folder of the ``pcctune`` package whose sources ``code_digest`` reads."""


def code_digest(*modules: str, package_root: Path | None = None) -> str:
    """sha256 of the source of ``modules`` (dotted names under ``pcctune``) and of every pcctune module they import,
    directly or through others (read from the ``import`` statements, without importing anything): a cache entry
    that holds this digest is made by this very code, so a change to any of it, a fix in evaluation say, is a miss.
    ``pcctune``'s version string cannot say this: it stays the same through every change between releases.
    ``package_root``: another copy of the package's sources (default: this one's, ``PACKAGE_ROOT``). Kept per process
    while the files it read are unchanged (``file_state``: a reloaded, edited module is read again)."""
    key = (tuple(sorted(modules)), package_root or PACKAGE_ROOT)
    kept = _DIGESTS.get(key)
    if kept is not None and [file_state(f) for f in kept[0]] == kept[1]:
        return kept[2]
    files, digest = _code_digest(*key)
    _DIGESTS[key] = (files, [file_state(f) for f in files], digest)
    return digest


_DIGESTS: dict[tuple[tuple[str, ...], Path], tuple[list[Path], list[FileState | None], str]] = {}
"""``code_digest``'s answers in this process: the files read, their states (``file_state``), the digest."""


def _code_digest(modules: tuple[str, ...], package_root: Path) -> tuple[list[Path], str]:
    seen: dict[str, Path] = {}
    waiting = list(modules)
    while waiting:
        name = waiting.pop()
        path = _module_file(name, package_root)
        if name in seen or path is None:
            continue
        seen[name] = path
        waiting.extend(_imported_modules(name, path, package_root))
    digest = hashlib.sha256()
    for name in sorted(seen):
        digest.update(f"{name}\0".encode())
        digest.update(seen[name].read_bytes())
    return list(seen.values()), digest.hexdigest()


def _module_file(name: str, package_root: Path) -> Path | None:
    """The source file of the pcctune module ``name`` (a module or a package's ``__init__.py``); ``None`` if none."""
    parts = name.split(".")
    if parts[0] != "pcctune":
        return None
    base = package_root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py") if parts[1:] else None, base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _imported_modules(name: str, path: Path, package_root: Path) -> list[str]:
    """The pcctune modules ``path``'s import statements name: ``import pcctune.a``, ``from pcctune.a import b``
    (``pcctune.a`` and, where ``b`` is a module, ``pcctune.a.b``), and the same written relatively."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append(base)
            found.extend(f"{base}.{alias.name}" for alias in node.names)
    return [module for module in found if module.split(".")[0] == "pcctune" and _module_file(module, package_root)]
