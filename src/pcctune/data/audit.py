"""Leakage audit: training (and dev) pairs checked against test sets at every level of ``.leakage``.

The audit is what ``pcctune data audit`` prints and the stage-2 set's report records: for each
source, how many pairs each level's own check flags, how many a filter at each level removes, how
many pairs have one or both sentences in a test set, the counts per test set, and examples of the
pairs first caught at each level. ``near_edge`` lists the pairs closest to the ``near`` threshold on
both sides, so a reader can judge the threshold from real examples.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pcctune.data.leakage import CLEAN_EXACT, LEVELS, LeakageLevel, LevelHits, PairCheck, TestIndex
from pcctune.data.leakage_cache import cached_checks, index_key, read_kept
from pcctune.data.sts import STSPair, STSTask
from pcctune.results import AuditRole, SourceAudit

EXAMPLES_PER_LEVEL = 5
EDGE_EXAMPLES = 4


@dataclass(frozen=True)
class CheckedSource:
    """One source's pairs with the check of each pair."""

    source: str
    role: AuditRole
    pairs: tuple[STSPair, ...]
    checks: tuple[PairCheck, ...]


def check_source(index: TestIndex, source: str, pairs: Sequence[STSPair], role: AuditRole = "train") -> CheckedSource:
    """Check every pair of one source against the index."""
    return CheckedSource(source, role, tuple(pairs), tuple(index.check_all(pairs)))


Waiting = dict[tuple[str, str], tuple[tuple[STSPair, ...], list[PairCheck]]]
"""Checks computed with ``keep=False`` and not yet in the cache: (index key, source) → the pairs and their checks."""

_WAITING: ContextVar[Waiting | None] = ContextVar("pcctune_waiting_checks", default=None)


class WaitingChecks:
    """The checks that ``check_sources(keep=False)`` computed inside one ``waiting_checks`` scope (one run)."""

    def __init__(self, waiting: Waiting) -> None:
        self._waiting = waiting

    def keep(self) -> None:
        """Keep them in the cache, for later commands to read."""
        while self._waiting:
            (key, source), (pairs, checks) = self._waiting.popitem()
            cached_checks(key, source, pairs, functools.partial(list, checks))


@contextmanager
def waiting_checks() -> Iterator[WaitingChecks]:
    """A scope (one run) in which checks computed with ``keep=False`` wait, so that a later ``check_sources`` of the
    same source and pairs in the scope uses them, until ``keep()`` writes them to the cache; left without
    ``keep()`` (the run failed), they are dropped with the scope. Outside any scope nothing waits."""
    waiting: Waiting = {}
    token = _WAITING.set(waiting)
    try:
        yield WaitingChecks(waiting)
    finally:
        _WAITING.reset(token)


@contextmanager
def kept_when_done() -> Iterator[None]:
    """Checks computed with ``keep=False`` in the block: inside a ``waiting_checks`` scope they wait for it (a run
    keeps them once it has trained); outside one, they are kept when the block ends without an error."""
    if _WAITING.get() is not None:
        yield
        return
    with waiting_checks() as waiting:
        yield
        waiting.keep()


def check_sources(
    test_tasks: Sequence[STSTask],
    sources: Sequence[tuple[str, Sequence[STSPair], AuditRole]],
    near_threshold: float,
    keep: bool = True,
) -> list[CheckedSource]:
    """Every ``(source, pairs, role)`` checked against the test sets, each source's checks read from the cache
    (``.leakage_cache``) when an earlier command kept them: the test index is built only for a source that was
    not. ``keep=False`` writes nothing (a command that may still fail on bad input leaves no trace): inside a
    ``waiting_checks`` scope the checks it computes wait there for the scope's ``keep()``, and a later call for the
    same source and pairs uses them instead of checking again."""
    index = functools.cache(lambda: TestIndex(test_tasks, near_threshold))
    key = index_key(test_tasks, near_threshold)
    waiting = _WAITING.get()
    if waiting is None:
        waiting = {}  # outside a scope: remembered by nobody

    def checked(source: str, pairs: Sequence[STSPair], role: AuditRole) -> CheckedSource:
        earlier = waiting.get((key, source))
        known = list(earlier[1]) if earlier is not None and earlier[0] == tuple(pairs) else None

        def compute() -> list[PairCheck]:
            return known if known is not None else index().check_all(pairs)

        if keep:
            checks = cached_checks(key, source, pairs, compute)
            waiting.pop((key, source), None)  # kept now
        else:
            kept = read_kept(key, source, pairs)
            checks = kept if kept is not None else compute()
            if kept is None:
                waiting[(key, source)] = (tuple(pairs), checks)
        return CheckedSource(source, role, tuple(pairs), tuple(checks))

    return [checked(*source) for source in sources]


@dataclass(frozen=True)
class LeakageCount:
    """What the checks of one source find: the pairs a filter at ``level`` removes (``test_pairs``), the test sets
    they are in (``by_task``: a pair in two test sets counts in both), and what a filter at each level checked would
    remove (``by_level``)."""

    level: LeakageLevel
    pairs: int
    test_pairs: int
    by_task: dict[str, int]
    by_level: dict[str, int]


def count_leakage(
    checks: Sequence[LevelHits], level: LeakageLevel, levels: Sequence[LeakageLevel] = LEVELS
) -> LeakageCount:
    """Count the checks of one source at ``level`` and at each of ``levels`` (``ExactCheck``s: pair, normalized and
    sentence, the levels checked without a near search)."""
    leaking = [c for c in checks if c is not CLEAN_EXACT and c.flagged(LeakageLevel.sentence)]
    removed = [c for c in leaking if c.flagged(level)]
    by_task = Counter(
        name for c in removed for name in {n for lower in LEVELS if level.includes(lower) for n in c.hits(lower)}
    )
    by_level = {lvl.value: sum(1 for c in leaking if c.flagged(lvl)) for lvl in levels}
    return LeakageCount(level, len(checks), len(removed), dict(sorted(by_task.items())), by_level)


def _example(pair: STSPair, check: PairCheck) -> dict[str, object]:
    example: dict[str, object] = {"sentence1": pair.sentence1, "sentence2": pair.sentence2, "score": pair.score}
    example["test_sets"] = sorted({name for level in LEVELS for name in check.hits(level)})
    if check.nearest is not None:
        example |= {"near_similarity": round(check.near_similarity, 4), "nearest_test_pair": list(check.nearest)}
    example["sentences_in_test"] = check.sentences_in_test
    return example


def summarize_source(checked: CheckedSource, max_examples: int = EXAMPLES_PER_LEVEL) -> SourceAudit:
    """Totals per level and per test set, and examples of the pairs each level is the first to catch."""
    flagged = {level.value: sum(1 for c in checked.checks if c.hits(level)) for level in LEVELS}
    firsts = Counter(c.first_level() for c in checked.checks)  # a filter at a level removes what it or one below flags
    removed = {level.value: sum(firsts[lower] for lower in LEVELS[: i + 1]) for i, level in enumerate(LEVELS)}
    in_test = Counter(str(c.sentences_in_test) for c in checked.checks)
    by_test_set = {
        level.value: dict(sorted(Counter(n for c in checked.checks for n in c.hits(level)).items())) for level in LEVELS
    }
    examples: dict[str, list[dict[str, object]]] = {level.value: [] for level in LEVELS}
    for pair, check in zip(checked.pairs, checked.checks, strict=True):
        first = check.first_level()
        if first is not None and len(examples[first.value]) < max_examples:
            examples[first.value].append(_example(pair, check))
    return SourceAudit(
        source=checked.source,
        role=checked.role,
        total=len(checked.pairs),
        flagged=flagged,
        removed=removed,
        sentences_in_test={k: in_test.get(k, 0) for k in ("0", "1", "2")},
        by_test_set=by_test_set,
        examples=examples,
    )


def near_edge(
    sources: Sequence[CheckedSource], threshold: float, count: int = EDGE_EXAMPLES
) -> list[dict[str, object]]:
    """The pairs closest to the ``near`` threshold on both sides (none caught by a lower level): the judgement calls."""
    candidates = [
        (check.near_similarity, checked.source, pair, check)
        for checked in sources
        for pair, check in zip(checked.pairs, checked.checks, strict=True)
        if check.nearest is not None and not check.hits(LeakageLevel.normalized)
    ]
    above = sorted((c for c in candidates if c[0] >= threshold), key=lambda item: item[0])[:count]
    below = sorted((c for c in candidates if c[0] < threshold), key=lambda item: -item[0])[:count]
    return [
        {"source": source, "flagged": similarity >= threshold, **_example(pair, check)}
        for similarity, source, pair, check in [*below[::-1], *above]
    ]
