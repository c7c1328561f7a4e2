"""Content hashes of files (data provenance in result files, GGUF cache keys)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
