"""An evaluation's embeddings so far, on disk, so that an interrupted evaluation continues where it stopped.

Scoring a 135M decoder on the seven STS test sets takes half an hour on one CPU core here, and a session
that ends inside it used to lose all of it. A ``VectorStore`` keeps every finished batch's vectors in
one ``.npz`` (rewritten atomically at most every ``every_s`` seconds, and when the encoding stops or is
interrupted; a write that fails, on a full disk say, is a warning and the last attempt); the same evaluation
run again loads it and ``encode_texts`` skips the batches it holds.
The batch plan does not depend on what is stored, so a resumed evaluation computes the very same vectors as
one that was never interrupted.

A store is only ever used by the evaluation it was made for: it carries the ``key`` of that evaluation (the model
as loaded, the settings, the code and machine: `pcctune.modeling.fingerprint`) and the sha256 of its contents,
read in full on opening. One that cannot be read (cut short, random bytes, an older format), whose contents do
not match their digest, or made under another key is set aside with one warning naming it, and the evaluation
starts afresh. Its owner deletes it once the results are written. ``pcctune eval`` keeps its stores in pcctune's
cache (``pcctune.cache_entry.resume_folder``), ``pcctune train`` in its run folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pcctune.cache_entry import set_aside
from pcctune.errors import PcctuneError
from pcctune.io import write_with

logger = logging.getLogger(__name__)

SUFFIX = ".vectors.npz"


class VectorStore:
    """Text → vector for one evaluation, flushed to ``path`` as batches finish."""

    def __init__(self, path: Path, key: str, every_s: float = 120.0) -> None:
        self.path, self.key, self.every_s = Path(path), key, every_s
        self.vectors: dict[str, np.ndarray] = {}
        self.unsaved = False
        self.last_flush = time.monotonic()

    @classmethod
    def open(cls, path: Path, key: str, every_s: float = 120.0) -> VectorStore:
        """The store at ``path`` when it is whole and was made under ``key``; otherwise an empty one (the file
        there is set aside with a warning)."""
        store = cls(path, key, every_s)
        if not store.path.is_file():
            return store
        try:
            saved_key, texts, vectors = _read(store.path)
        except Exception as error:  # noqa: BLE001  (any unreadable store, whatever the reader raises: start afresh)
            set_aside(store.path, f"an unreadable resume store: {type(error).__name__}: {error}")
            return store
        if saved_key != key:
            set_aside(store.path, "a resume store made by another evaluation (other settings or model files)")
            return store
        store.vectors = dict(zip(texts, vectors, strict=True))
        logger.info("continuing an interrupted evaluation: %d vectors from %s", len(texts), store.path)
        return store

    def __contains__(self, text: str) -> bool:
        return text in self.vectors

    def __len__(self) -> int:
        return len(self.vectors)

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Keep one finished batch; write the store when ``every_s`` have passed since the last write."""
        self.vectors.update(zip(texts, vectors, strict=True))
        self.unsaved = True
        if time.monotonic() - self.last_flush >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Write every vector so far (atomically: the previous file stays whole until the new one is)."""
        if not self.unsaved:
            return
        texts = list(self.vectors)

        def save(handle: Any) -> None:
            key = np.frombuffer(self.key.encode(), dtype=np.uint8)
            names = np.frombuffer(json.dumps(texts).encode(), dtype=np.uint8)
            vectors = np.stack([self.vectors[t] for t in texts])
            digest = np.frombuffer(_digest(key, names, vectors).encode(), dtype=np.uint8)
            np.savez(handle, key=key, texts=names, vectors=vectors, digest=digest)

        try:
            write_with(self.path, save)
        except PcctuneError as error:  # a resume point is a convenience: the evaluation itself goes on
            logger.warning("%s; the evaluation goes on without a resume point", error)
            self.every_s = math.inf
        self.unsaved = False
        self.last_flush = time.monotonic()

    def discard(self) -> None:
        """Delete the file: its evaluation is complete."""
        self.path.unlink(missing_ok=True)


def _digest(key: np.ndarray, texts: np.ndarray, vectors: np.ndarray) -> str:
    digest = hashlib.sha256(key.tobytes())
    digest.update(texts.tobytes())
    digest.update(str((vectors.dtype.str, vectors.shape)).encode())
    digest.update(np.ascontiguousarray(vectors).tobytes())
    return digest.hexdigest()


def _read(path: Path) -> tuple[str, list[str], np.ndarray]:
    """A store's key, texts and vectors, read in full and checked against its digest."""
    with np.load(path, allow_pickle=False) as saved:
        key, texts, vectors, digest = (saved[name] for name in ("key", "texts", "vectors", "digest"))
    if bytes(digest).decode() != _digest(key, texts, vectors):
        raise ValueError("its contents do not match their sha256")
    names = json.loads(bytes(texts).decode())
    if not isinstance(names, list) or len(names) != len(vectors):
        raise ValueError("as many texts as vectors expected")
    return bytes(key).decode(), names, vectors
