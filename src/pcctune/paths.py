"""Where pcctune reads data and keeps its cache.

SentEval data: a flag, ``PCCTUNE_DATA``, or ``../shared/data`` beside the checkout. Cache (converted
GGUF files, unzipped packaged models): ``PCCTUNE_CACHE``, else ``~/.cache/pcctune``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pcctune.errors import PcctuneError

DATA_ENV = "PCCTUNE_DATA"
CACHE_ENV = "PCCTUNE_CACHE"


def cache_root() -> Path:
    """The folder pcctune caches derived model files in."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "pcctune"))


def _candidate_roots() -> list[Path]:
    here = Path(__file__).resolve()
    # src/pcctune/paths.py -> repo root is parents[2]; shared/ sits beside the checkout.
    repo_root = here.parents[2]
    return [Path.cwd() / ".." / "shared" / "data", repo_root.parent / "shared" / "data"]


def resolve_senteval_dir(path: str | Path | None = None) -> Path:
    """Return a SentEval folder (one holding ``downstream/``).

    ``path`` may name the SentEval folder itself or a data root holding ``senteval/``.
    Without ``path``: ``$PCCTUNE_DATA``, then ``../shared/data`` beside the checkout.
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
            if (folder / "downstream").is_dir():
                return folder.resolve()
    where = ", ".join(str(c) for c in candidates)
    raise PcctuneError(
        f"no SentEval data folder (with downstream/) at {where}; pass --data PATH or set {DATA_ENV}, "
        "or fetch the STS data with: pcctune data download --dest data"
    )
