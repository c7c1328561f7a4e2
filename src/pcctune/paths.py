"""Where pcctune reads data and keeps its cache.

SentEval data: the ``--data`` flag, ``PCCTUNE_DATA``, or a ``shared/data`` folder beside a source checkout (a data
folder kept next to the repository); else the copy fetched on first use into the user cache
(``pcctune.data.cache``). Cache (converted GGUF files, unzipped packaged models, the fetched STS data):
``PCCTUNE_CACHE``, else ``~/.cache/pcctune``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pcctune.errors import PcctuneError
from pcctune.provenance import FileState, file_state

DATA_ENV = "PCCTUNE_DATA"
DOWNSTREAM = "downstream"
"""The folder of a SentEval copy that holds its tasks' folders (STS, SICK, SNLI, the transfer tasks)."""
CACHE_ENV = "PCCTUNE_CACHE"


def cache_root() -> Path:
    """The folder pcctune caches derived model files and fetched data in."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "pcctune"))


def data_cache_dir() -> Path:
    """Where the STS data fetched on first use lives (``cache_root()/data/senteval``)."""
    return cache_root() / "data" / "senteval"


def data_is_chosen(path: str | Path | None) -> bool:
    """Whether the user named a data folder (``--data`` or ``PCCTUNE_DATA``): then nothing is fetched in its place."""
    return path is not None or bool(os.environ.get(DATA_ENV))


def _candidate_roots() -> list[Path]:
    """A ``shared/data`` folder beside the working directory's parent or beside the source checkout."""
    here = Path(__file__).resolve()
    # src/pcctune/paths.py -> repo root is parents[2]; shared/ sits beside the checkout.
    repo_root = here.parents[2]
    return [Path.cwd() / ".." / "shared" / "data", repo_root.parent / "shared" / "data"]


def resolve_senteval_dir(path: str | Path | None = None) -> Path:
    """Return a SentEval folder (one holding ``downstream/``).

    ``path`` may name the SentEval folder itself or a data root holding ``senteval/``.
    Without ``path``: ``$PCCTUNE_DATA``, then ``shared/data`` beside the checkout. Where none is found, the
    commands that read STS data use the copy fetched into the user cache (``pcctune.data.cache.senteval_folder``).
    """
    candidates: list[Path]
    if path is not None:
        candidates = [Path(path)]
    elif os.environ.get(DATA_ENV):
        candidates = [Path(os.environ[DATA_ENV])]
    else:
        candidates = _candidate_roots()
    for candidate in candidates:
        for folder in (candidate, candidate / "senteval"):
            if (folder / DOWNSTREAM).is_dir():
                return folder.resolve()
    where = ", ".join(str(c) for c in candidates)
    raise PcctuneError(
        f"no SentEval data folder (with downstream/) at {where}; pass --data PATH or set {DATA_ENV}, "
        "or fetch the STS data with: pcctune data download --dest DIR"
    )


FilesState = tuple[tuple[str, FileState | None], ...]


def files_state(paths: Iterable[Path]) -> FilesState:
    """Each file's path and state (`pcctune.provenance.file_state`: inode, size, modification and change times, a
    small file's sha256), every file under a folder, nothing for a path that does not exist: a key that changes when
    a file a cached result was read from changes."""
    files: set[Path] = set()
    for path in paths:
        if path.is_dir():
            files.update(f for f in path.rglob("*") if f.is_file())
        elif path.is_file():
            files.add(path)
    return tuple((str(f), file_state(f)) for f in sorted(files))


def config_path(name: str | Path, base: Path | None = None) -> Path:
    """A data file or folder a run config names, as pcctune reads it: ``~`` expanded, a relative path taken from
    ``base`` (the config file's folder; the working folder without one: a config given as a mapping, or read back
    from a run folder), made absolute. Reading a config (``pcctune.training.config.load_config``) and the cache keys
    over the files it names both resolve through here."""
    path = Path(name).expanduser()
    return (path if path.is_absolute() else (base or Path.cwd()) / path).resolve()
