"""Dev sets for checkpoint selection and searches, filtered against every test set at the run's leakage level.

A dev set is a list of parts, each scored on its own: the built-in ``sick-trial`` and ``stsb-dev-filtered``, a
user's pair file (``.csv``, ``.tsv``, ``.jsonl``: ``pcctune.data.pairs.read_pairs_file``), or ``holdout``: a
fixed 15 % of the stage's own scored training pairs, which training then leaves out. Every part goes through the
same filter as the training data (``pcctune.data.leakage.split_clean``, the audit's code) at the stage's
``leakage`` level, so nothing that level removes from training is used to choose a checkpoint either; a user's pair
file, the user's own data, at ``normalized`` at least (``dev_file_level``). Where a stage keeps its test pairs
(``leakage: none``), every part is still filtered, a built-in one at ``pair``: no checkpoint is chosen on test
pairs.

At ``pair`` (the paper's filter) nine of SICK's 500 trial pairs are SICK-R test pairs, and 1,131 of STS-B dev's
1,500 pairs are in STS12–16. At a stricter level a built-in set can shrink to a handful (at ``sentence`` SICK
trial keeps about 10 pairs): a built-in part that keeps fewer than ``MIN_FILTERED_DEV_PAIRS`` above ``pair`` is
replaced by the held-out share of the training set.
"""

from __future__ import annotations

import functools
import logging
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pcctune.correlation import MIN_PAIRS
from pcctune.data.leakage import (
    LEVELS,
    NEAR_THRESHOLD,
    OWN_DATA_LEVEL,
    PAPER_LEVEL,
    LeakageLevel,
    TestIndex,
    normalize_sentence,
    split_clean,
)
from pcctune.data.pairs import PAIR_FILE_SUFFIXES, read_pairs_file
from pcctune.data.stage2 import DEV_SOURCES, SourcedPair, source_task
from pcctune.data.sts import STSPair, STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError, unknown

logger = logging.getLogger(__name__)

SINGLE_DEV_SETS: dict[str, Callable[[Path], STSTask]] = {
    name: functools.partial(source_task, source=source) for name, source in DEV_SOURCES.items()
}
"""Each built-in dev set → its reader, given the SentEval folder (``pcctune.data.stage2.DEV_SOURCES``)."""
COMBINED_DEV = "sick-trial+stsb-dev"
"""Both filtered dev sets, each scored on its own and averaged weighted by its size."""
HOLDOUT = "holdout"
"""A fixed share of the stage's own scored training pairs (``in_holdout``), left out of its training."""
DEV_SETS: dict[str, tuple[str, ...]] = {
    **{name: (name,) for name in SINGLE_DEV_SETS},
    COMBINED_DEV: tuple(SINGLE_DEV_SETS),
    HOLDOUT: (HOLDOUT,),
}
"""Every named dev set a stage or a search can select on → the single sets it is made of."""
MIN_FILTERED_DEV_PAIRS = 200
"""Above ``pair``, a built-in part that keeps fewer pairs is replaced by the held-out share of the training set."""
HOLDOUT_PERCENT = 15


def in_holdout(pair: STSPair | SourcedPair) -> bool:
    """Whether ``pair`` belongs to the held-out share: a hash of its two sentences (either order), so the same pairs
    are held out for every loss, seed and subsample of a set."""
    key = "\t".join(sorted((pair.sentence1, pair.sentence2)))
    return zlib.crc32(key.encode("utf-8")) % 100 < HOLDOUT_PERCENT


def _folded(pair: STSPair | SourcedPair) -> tuple[str, ...]:
    return tuple(sorted((normalize_sentence(pair.sentence1), normalize_sentence(pair.sentence2))))


Held = TypeVar("Held", STSPair, SourcedPair)


def outside_holdout(pairs: Sequence[Held], among: Sequence[STSPair | SourcedPair] | None = None) -> list[Held]:
    """``pairs`` less the held-out share (``in_holdout``) and less every twin of a held-out pair of ``among`` (the
    scored pairs the share is drawn from; default ``pairs``): a pair that is a held-out one once case, punctuation
    and whitespace are folded (``normalize_sentence``, either order) hashes apart from it, and would be trained on
    while its twin selects checkpoints (13 such pairs in STS-B + SICK-R train)."""
    held = {_folded(pair) for pair in (pairs if among is None else among) if in_holdout(pair)}
    return [pair for pair in pairs if not in_holdout(pair) and _folded(pair) not in held]


def dev_entries(dev: str | Sequence[str]) -> list[str]:
    """The single parts a ``dev`` setting names: a named set (``DEV_SETS``) or a list of names and pair files. Its
    callers take ``none`` (no dev evaluation) where they allow it; here ``none`` or nothing at all is an error."""
    entries = [dev] if isinstance(dev, str) else list(dev)
    if not entries or entries == ["none"]:
        raise PcctuneError(f"a dev evaluation needs a dev set, not {dev!r}; name one (e.g. sick-trial) or a pair file")
    parts: list[str] = []
    for entry in entries:
        if entry in DEV_SETS:
            parts += DEV_SETS[entry]
        elif Path(entry).suffix.lower() in PAIR_FILE_SUFFIXES:
            parts.append(entry)
        else:
            raise PcctuneError(unknown("dev set", entry, [*DEV_SETS, "none"], " or a .csv/.tsv/.jsonl file"))
    return parts


def dev_name(dev: str | Sequence[str]) -> str:
    """The dev set's name in metric keys (``eval_{name}_spearman_cosine``): a named set's own name, else its parts'
    names (a file by its stem) joined by ``+``."""
    if isinstance(dev, str):
        return dev
    return "+".join(Path(entry).stem if Path(entry).suffix else entry for entry in dev)


def dev_file_level(level: LeakageLevel | None) -> LeakageLevel:
    """The level a user's dev file is filtered at, given the stage's (``None``: ``leakage: none``): the stricter of
    it and ``OWN_DATA_LEVEL``, the default of a user's own pairs."""
    return max(level or PAPER_LEVEL, OWN_DATA_LEVEL, key=LEVELS.index)


def filtered(pairs: Sequence[STSPair], index: TestIndex, level: LeakageLevel) -> list[STSPair]:
    """The pairs a filter at ``level`` keeps (the training data's filter; at ``pair`` without building the index)."""
    if level == LeakageLevel.pair:
        return index.without_test_pairs(pairs)
    return split_clean(pairs, index.check_all(pairs), level)[0]


def dev_parts(
    dev: str | Sequence[str],
    senteval_dir: Path,
    level: LeakageLevel | None = PAPER_LEVEL,
    near_threshold: float = NEAR_THRESHOLD,
    training_pairs: Callable[[], Sequence[STSPair | SourcedPair]] | None = None,
    test_tasks: Sequence[STSTask] | None = None,
) -> dict[str, list[STSPair]]:
    """Each part of dev set ``dev`` → its pairs that a leakage filter at ``level`` keeps against ``test_tasks``
    (default: the seven STS test sets), a pair file at ``dev_file_level(level)``. ``level=None`` (a stage whose
    training keeps its test pairs) still filters every built-in part at ``pair``: a checkpoint is never chosen on
    test pairs. ``training_pairs`` gives the stage's scored
    training pairs, already filtered, for the ``holdout`` part and for replacing a built-in part that keeps too few
    above ``pair``."""
    index = TestIndex(list(test_tasks) if test_tasks is not None else load_test_tasks(senteval_dir), near_threshold)
    parts: dict[str, list[STSPair]] = {}
    read: dict[str, tuple[str, int, LeakageLevel]] = {}  # part → what it was read from, its pairs, the filter's level
    dev_level = level or PAPER_LEVEL
    for entry in dev_entries(dev):
        if entry == HOLDOUT:
            parts[HOLDOUT] = _holdout(training_pairs, index, dev_level, "dev: holdout")
        elif entry in SINGLE_DEV_SETS:
            pairs = SINGLE_DEV_SETS[entry](senteval_dir).pairs
            kept = filtered(pairs, index, dev_level)
            if dev_level != LeakageLevel.pair and len(kept) < MIN_FILTERED_DEV_PAIRS:
                parts[HOLDOUT] = _holdout_instead(entry, len(kept), training_pairs, index, dev_level)
            else:
                parts[entry], read[entry] = kept, (entry, len(pairs), dev_level)
        else:
            pairs = read_pairs_file(entry)
            parts[Path(entry).stem] = filtered(pairs, index, dev_file_level(level))
            read[Path(entry).stem] = (entry, len(pairs), dev_file_level(level))
    for part, pairs in parts.items():
        if len(pairs) < MIN_PAIRS:
            others = ", ".join(name for name in [*DEV_SETS, "none"] if part not in DEV_SETS.get(name, ()))
            source, total, part_level = read.get(part, ("", 0, dev_level))
            removed = f" (it removed {total - len(pairs)} of the {total} pairs of {source})" if source else ""
            raise PcctuneError(
                f"dev set {part!r} keeps {len(pairs)} pairs once the leakage filter ({part_level.value}) has "
                f"run{removed}, and a correlation needs at least {MIN_PAIRS}; choose another dev set ({others}) "
                "or a pair file"
            )
    return parts


def _holdout_instead(
    entry: str,
    kept: int,
    training_pairs: Callable[[], Sequence[STSPair | SourcedPair]] | None,
    index: TestIndex,
    level: LeakageLevel,
) -> list[STSPair]:
    """The held-out share in place of built-in dev set ``entry``, which keeps only ``kept`` pairs above ``pair``
    (the log says so)."""
    why = f"dev set {entry!r} keeps {kept} pairs at leakage level {level.value!r}"
    held = _holdout(training_pairs, index, level, why)
    logger.warning(
        "%s (fewer than %d): checkpoints are chosen on the held-out %d %% of the training pairs instead (holdout), "
        "which training leaves out",
        why,
        MIN_FILTERED_DEV_PAIRS,
        HOLDOUT_PERCENT,
    )
    return held


def _holdout(
    training_pairs: Callable[[], Sequence[STSPair | SourcedPair]] | None,
    index: TestIndex,
    level: LeakageLevel,
    why: str,
) -> list[STSPair]:
    if training_pairs is None:
        raise PcctuneError(f"{why}: a held-out share needs scored training pairs; name a dev set or a pair file")
    held = [STSPair(p.sentence1, p.sentence2, p.score) for p in training_pairs() if in_holdout(p)]
    return filtered(held, index, level)


def size_weighted(scores: Mapping[str, float], parts: Mapping[str, Sequence[STSPair]]) -> float:
    """A dev set's score from its single sets' scores: their mean weighted by pair count.

    A correlation is a within-set statistic and the sets score on different scales, so each set is
    scored on its own and the pairs are never pooled. One set: its own score.
    """
    return float(sum(scores[part] * len(parts[part]) for part in scores) / sum(len(parts[part]) for part in scores))
