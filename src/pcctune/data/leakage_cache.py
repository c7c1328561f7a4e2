"""Leakage checks kept between commands: each source's checks against the test sets, as a verified cache entry.

Checking the stage-2 sources (STS-B and SICK-R train, the two dev sets) at every level of ``.leakage`` means
indexing every test sentence for MinHash LSH and querying it once per training sentence: seconds before the first
step of every ``pcctune train`` on the stage-2 data, for the same answer each time. The checks of one source are
kept in ``leakage/SOURCE-DIGEST`` under ``cache_root`` (``checks.json``, one
``PairCheck`` per pair), a ``cached_folder`` entry verified
against its manifest on every use. Its digest covers everything the checks depend on:

- the test sets as read from their files (each task's name and pairs: a changed test file changes it);
- the source's pairs;
- the settings of the levels (the ``near`` threshold, n-gram size, MinHash permutations, LSH weights, the edge
  margin), the checking code itself (``.leakage`` and every pcctune module it imports:
  `pcctune.provenance.code_digest`), datasketch's version and Python's Unicode tables,

so a check is served from the cache only where computing it again would give the same answer. Where the cache
cannot be written, the checks are computed and the command goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pcctune.cache_entry import cached_folder, damage
from pcctune.data import leakage
from pcctune.data.leakage import PairCheck
from pcctune.data.pairs import pairs_sha256
from pcctune.data.sts import STSPair, STSTask
from pcctune.io import write_json
from pcctune.paths import cache_root
from pcctune.provenance import code_digest

logger = logging.getLogger(__name__)

KIND = "leakage"
CHECKS_FILE = "checks.json"


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def index_key(test_tasks: Sequence[STSTask], near_threshold: float) -> str:
    """The digest of what every check against ``test_tasks`` depends on except the checked pairs: the test sets'
    names and pairs, the levels' settings, the code that checks and the Unicode tables its normalization reads
    (NFKC, ``casefold`` and ``\\w`` change with Python's Unicode version)."""
    settings = {
        "near_threshold": near_threshold,
        "ngram": leakage.NGRAM,
        "num_perm": leakage.NUM_PERM,
        "lsh_weights": list(leakage.LSH_WEIGHTS),
        "edge_margin": leakage.EDGE_MARGIN,
        "code": code_digest(leakage.__name__),
        "datasketch": version("datasketch"),
        "unicode": unicodedata.unidata_version,
    }
    return _digest(
        {"settings": settings, "tests": [[task.name, pairs_sha256(task.pairs, scores=False)] for task in test_tasks]}
    )


def _to_json(check: PairCheck) -> dict[str, Any]:
    return dataclasses.asdict(check)


def _from_json(row: dict[str, Any]) -> PairCheck:
    nearest = row["nearest"]
    return PairCheck(
        pair=tuple(row["pair"]),
        normalized=tuple(row["normalized"]),
        near=tuple(row["near"]),
        sentence=tuple(row["sentence"]),
        near_similarity=float(row["near_similarity"]),
        nearest=None if nearest is None else (nearest[0], nearest[1]),
        sentences_in_test=int(row["sentences_in_test"]),
    )


def entry_folder(key: str, source: str, pairs: Sequence[STSPair]) -> tuple[Path, str]:
    """The cache folder of ``source``'s checks against the index ``key``, and the digest it is verified against."""
    digest = _digest({"index": key, "pairs": pairs_sha256(pairs, scores=False)})
    name = re.sub(r"[^\w.-]+", "_", Path(source).name).strip("_") or "pairs"
    return cache_root() / KIND / f"{name}-{digest[:16]}", digest


def cached_checks(
    key: str, source: str, pairs: Sequence[STSPair], check: Callable[[], list[PairCheck]]
) -> list[PairCheck]:
    """``check()`` of ``source``'s ``pairs`` against the index ``key`` (``index_key``), read from the cache when
    an earlier command made it, else computed and kept there."""
    folder, digest = entry_folder(key, source, pairs)
    computed = functools.cache(check)  # once, though writing it fails

    def build(staging: Path) -> None:
        write_json([_to_json(c) for c in computed()], staging / CHECKS_FILE)

    made_by = f"leakage checks of {len(pairs)} pairs of {source}"
    try:
        cached_folder(folder, build, made_by, source=digest)
        rows = json.loads((folder / CHECKS_FILE).read_text(encoding="utf-8"))
    except OSError as error:
        logger.warning("leakage checks of %s are not kept in the cache (%s); computing them", source, error)
        return computed()
    return [_from_json(row) for row in rows]


def read_kept(key: str, source: str, pairs: Sequence[STSPair]) -> list[PairCheck] | None:
    """``source``'s checks against the index ``key`` where an earlier command kept them (and they verify), else
    ``None``; nothing is written."""
    folder, digest = entry_folder(key, source, pairs)
    if damage(folder, digest) is not None:
        return None
    try:
        rows = json.loads((folder / CHECKS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return [_from_json(row) for row in rows]
