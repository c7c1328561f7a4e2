"""Train/test leakage at four levels, from the paper's exact-pair filter to sentence-disjoint data.

Pcc-tuning (Appendix B) removes a training pair (s1, s2) when a test pair (t1, t2) has s1 = t1 and
s2 = t2, or s1 = t2 and s2 = t1, whatever the gold scores. That filter is the ``pair`` level. Each
level above it catches more:

- ``pair``: the pair in either order, exactly (the paper's filter, its 5,398 pairs);
- ``normalized``: the pair in either order after ``normalize_sentence`` (Unicode NFKC, case
  folding, punctuation removed, whitespace folded);
- ``near``: both sentences within a character n-gram Jaccard similarity of ``near_threshold`` of the two
  sentences of one test pair (either order), found by MinHash LSH (``datasketch``, bands weighted against
  false negatives) and confirmed with the exact Jaccard of the n-gram sets;
- ``sentence``: one sentence, or both, found (normalized) anywhere in a test set, paired with anything.

Filtering at a level removes every pair flagged at that level or any level below it, so the sets
shrink as the level rises and ``sentence`` leaves no test sentence in the training data.

Where a run names no level, the built-in stage-2 set is filtered at ``PAPER_LEVEL`` (so its counts are the paper's)
and a user's own scored pairs at ``OWN_DATA_LEVEL``.
"""

from __future__ import annotations

import random
import re
import unicodedata
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pcctune.data.sts import STSPair, STSTask
from pcctune.errors import PcctuneError, unknown

NEAR_THRESHOLD = 0.8
"""Default Jaccard similarity of character 3-grams for ``near`` (chosen on the standard data: docs/leakage.md)."""
NGRAM = 3
NUM_PERM = 128
LSH_WEIGHTS = (0.1, 0.9)
"""LSH bands weighted against false negatives (a missed near pair is a leak); every candidate is confirmed
with the exact Jaccard of the n-gram sets, so the search has no false positives."""
EDGE_MARGIN = 0.1
"""Pairs this far below the threshold are still measured, so a report can show both sides of the edge."""
_PUNCTUATION = re.compile(r"[^\w\s]|_")


def _minhashes(sentences: Sequence[str], grams: dict[str, frozenset[str]]) -> list[Any]:
    """MinHash signatures of the sentences' n-gram sets, computed in one batch.

    Each n-gram's hash is its 32-bit CRC (deterministic across processes, unlike ``hash``), which the signatures
    take as their hash values; datasketch's default SHA-1 per n-gram would cost most of an audit."""
    from datasketch import MinHash

    values = [[zlib.crc32(g.encode()) for g in grams[s]] for s in sentences]
    return MinHash.bulk(values, num_perm=NUM_PERM, hashfunc=int)


def _empty_lsh(threshold: float) -> Any:
    """An empty MinHash LSH index. datasketch names its tables by drawing from the global ``random`` module; the
    caller's ``random`` state is put back after, so its random sequence does not depend on whether the checks were
    cached."""
    from datasketch import MinHashLSH

    state = random.getstate()
    try:
        return MinHashLSH(threshold=threshold, num_perm=NUM_PERM, weights=LSH_WEIGHTS)
    finally:
        random.setstate(state)


class LeakageLevel(StrEnum):
    """How strictly training pairs are checked against the test sets (each level includes those below)."""

    pair = "pair"
    normalized = "normalized"
    near = "near"
    sentence = "sentence"

    def includes(self, other: LeakageLevel) -> bool:
        """Whether filtering at this level also removes what ``other`` flags."""
        return LEVELS.index(other) <= LEVELS.index(self)


LEVELS: tuple[LeakageLevel, ...] = tuple(LeakageLevel)
PAPER_LEVEL = LeakageLevel.pair
"""Pcc-tuning's filter (Appendix B), the default of the built-in stage-2 set: its 991 + 4,407 = 5,398 pairs."""
OWN_DATA_LEVEL = LeakageLevel.normalized
"""The default of a user's own scored pairs (pair files, Hub datasets): a test pair that differs only in case,
punctuation or spacing is the test pair as the model reads it (SimCSE's evaluation folds whitespace; an uncased
tokenizer folds case), so the exact ``pair`` filter would let it through."""


def leakage_level(value: str | LeakageLevel) -> LeakageLevel:
    """``value`` as a level; one clear error naming the levels for anything else."""
    try:
        return LeakageLevel(value)
    except ValueError:
        raise PcctuneError(unknown("leakage level", value, LEVELS, " (each removes more than the last)")) from None


def normalize_sentence(text: str) -> str:
    """Unicode NFKC, case folding, invisible format characters dropped (a zero-width space or soft hyphen inside a
    word does not split it: a tokenizer drops them too), punctuation removed, runs of whitespace folded to one
    space. A combining mark inside a word stays (a vowel sign or a harakat is part of it: ``किताब`` and ``कुतुब``
    are two words, ``i̇stanbul`` one); one after a space or punctuation goes with it."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return " ".join(_PUNCTUATION.sub(" ", text).split())
    kept: list[str] = []
    for char in text:
        if unicodedata.category(char) == "Cf":
            continue
        in_word = _is_mark(char) and bool(kept) and (kept[-1].isalnum() or _is_mark(kept[-1]))
        kept.append(char if char.isalnum() or char.isspace() or in_word else " ")
    return " ".join("".join(kept).split())


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def ngrams(text: str, n: int = NGRAM) -> frozenset[str]:
    """The character n-grams of a normalized sentence (the sentence itself when shorter than n)."""
    return frozenset(text[i : i + n] for i in range(max(1, len(text) - n + 1)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity |a ∩ b| / |a ∪ b| of two n-gram sets (1 for two empty sets)."""
    return len(a & b) / len(a | b) if a or b else 1.0


class LevelHits(ABC):
    """What a check of one pair finds at each level (``hits``), and what a filter at a level makes of it."""

    @abstractmethod
    def hits(self, level: LeakageLevel) -> tuple[str, ...]:
        """Test sets this pair leaks into at exactly ``level``."""

    def flagged(self, level: LeakageLevel) -> bool:
        """Whether a filter at ``level`` removes this pair (it is flagged at that level or one below)."""
        return any(self.hits(lower) for lower in LEVELS if level.includes(lower))


@dataclass(frozen=True)
class PairCheck(LevelHits):
    """What each level finds for one training pair: the test sets it leaks into at that level.

    ``near_similarity`` is the smaller of the two sentence similarities of the closest test pair (1.0 for
    an exact normalized match; 0.0 when no test pair comes within ``EDGE_MARGIN`` of the threshold, so values
    below the threshold show the pairs the ``near`` level just lets through); ``sentences_in_test`` counts the
    pair's sentences (0, 1 or 2) found normalized in a test set."""

    pair: tuple[str, ...]
    normalized: tuple[str, ...]
    near: tuple[str, ...]
    sentence: tuple[str, ...]
    near_similarity: float
    nearest: tuple[str, str] | None
    sentences_in_test: int

    def hits(self, level: LeakageLevel) -> tuple[str, ...]:
        """Test sets this pair leaks into at exactly ``level``."""
        return getattr(self, level.value)

    def first_level(self) -> LeakageLevel | None:
        """The lowest level that flags this pair (``None``: clean at every level)."""
        return next((level for level in LEVELS if self.hits(level)), None)


@dataclass(frozen=True)
class ExactCheck(LevelHits):
    """The test sets one pair leaks into at the levels found without a near search: the pair itself (``pair``),
    the pair normalized (``normalized``), and a sentence of it found normalized in a test set (``sentence``)."""

    pair: tuple[str, ...]
    normalized: tuple[str, ...]
    sentence: tuple[str, ...]

    def hits(self, level: LeakageLevel) -> tuple[str, ...]:
        """Test sets this pair leaks into at exactly ``level`` (``near`` is not checked: always empty)."""
        return () if level == LeakageLevel.near else getattr(self, level.value)


CLEAN_EXACT = ExactCheck((), (), ())


class TestIndex:
    """The test pairs and sentences of some test sets, indexed for every level's check.

    Args:
        test_tasks: the test sets (their names label the hits).
        near_threshold: the ``near`` level's Jaccard similarity of character 3-grams, in (0, 1]; the search
            runs ``EDGE_MARGIN`` below it (at 0 for thresholds under the margin).
    """

    __test__ = False  # not a pytest class

    def __init__(self, test_tasks: Sequence[STSTask], near_threshold: float = NEAR_THRESHOLD) -> None:
        if not 0 < near_threshold <= 1:
            raise PcctuneError(f"near_threshold {near_threshold} is not a Jaccard similarity in (0, 1]")
        self.test_sets = {task.name: len(task.pairs) for task in test_tasks}
        self.near_threshold = near_threshold
        self._exact: dict[tuple[str, str], set[str]] = {}
        self._normalized: dict[tuple[str, str], set[str]] = {}
        self._sentence_sets: dict[str, set[str]] = {}
        self._pairs_of_sentence: dict[str, set[tuple[str, str]]] = {}
        for task in test_tasks:
            for pair in task.pairs:
                a, b = normalize_sentence(pair.sentence1), normalize_sentence(pair.sentence2)
                for key, index in (((pair.sentence1, pair.sentence2), self._exact), ((a, b), self._normalized)):
                    index.setdefault(key, set()).add(task.name)
                    index.setdefault(key[::-1], set()).add(task.name)
                for sentence in (a, b):
                    self._sentence_sets.setdefault(sentence, set()).add(task.name)
                    self._pairs_of_sentence.setdefault(sentence, set()).add((a, b))
        self._search_threshold = max(0.0, near_threshold - EDGE_MARGIN)
        self._grams: dict[str, frozenset[str]] = {}
        self._lsh: Any = None

    def _near_index(self) -> Any:
        """The MinHash LSH index of every normalized test sentence, built on first use (the ``near`` level)."""
        if self._lsh is None:
            self._grams = {sentence: ngrams(sentence) for sentence in self._sentence_sets}
            sentences = list(self._grams)
            lsh = _empty_lsh(self._search_threshold)
            with lsh.insertion_session() as session:
                for sentence, minhash in zip(sentences, _minhashes(sentences, self._grams), strict=True):
                    session.insert(sentence, minhash, check_duplication=False)
            self._lsh = lsh
        return self._lsh

    def _near_sentences(self, sentence: str, grams: frozenset[str], minhash: Any) -> dict[str, float]:
        """Test sentences within the search threshold of ``sentence`` → their exact Jaccard similarity."""
        found = {}
        for candidate in self._near_index().query(minhash):
            similarity = 1.0 if candidate == sentence else jaccard(grams, self._grams[candidate])
            if similarity >= self._search_threshold:
                found[candidate] = similarity
        return found

    def check_all(self, pairs: Sequence[STSPair]) -> list[PairCheck]:
        """Every level's check of every pair (MinHash signatures computed in one batch)."""
        normalized = [(normalize_sentence(p.sentence1), normalize_sentence(p.sentence2)) for p in pairs]
        distinct = sorted({s for pair in normalized for s in pair})
        grams = {s: ngrams(s) for s in distinct}
        signatures = _minhashes(distinct, grams)
        near = {s: self._near_sentences(s, grams[s], m) for s, m in zip(distinct, signatures, strict=True)}
        return [self._check(pair, a, b, near) for pair, (a, b) in zip(pairs, normalized, strict=True)]

    def _check(self, pair: STSPair, a: str, b: str, near: dict[str, dict[str, float]]) -> PairCheck:
        near_hits: set[str] = set()
        best, nearest = 0.0, None
        for t1, t2 in {tp for s in near[a] for tp in self._pairs_of_sentence[s]}:
            for x, y in ((t1, t2), (t2, t1)):
                if x in near[a] and y in near[b]:
                    similarity = min(near[a][x], near[b][y])
                    if similarity >= self.near_threshold:
                        near_hits |= self._normalized[(x, y)]
                    if similarity > best:
                        best, nearest = similarity, (x, y)
        in_test = [s for s in (a, b) if s in self._sentence_sets]
        return PairCheck(
            pair=tuple(sorted(self._exact.get((pair.sentence1, pair.sentence2), ()))),
            normalized=tuple(sorted(self._normalized.get((a, b), ()))),
            near=tuple(sorted(near_hits)),
            sentence=tuple(sorted(set().union(*(self._sentence_sets[s] for s in in_test)))),
            near_similarity=best,
            nearest=nearest,
            sentences_in_test=len(in_test),
        )

    def check_exact(self, pairs: Iterable[tuple[str, str]]) -> list[ExactCheck]:
        """The checks that need no near search (``pair``, ``normalized``, ``sentence``) of every pair of sentences:
        dictionary look-ups only, each distinct sentence normalized once, so that a source of hundreds of thousands of
        pairs (SimCSE's NLI triplets) is checked in seconds. Clean pairs share one ``ExactCheck``."""
        normalized: dict[str, str] = {}

        def norm(text: str) -> str:
            found = normalized.get(text)
            if found is None:
                found = normalized[text] = normalize_sentence(text)
            return found

        checks = []
        for first, second in pairs:
            a, b = norm(first), norm(second)
            exact = self._exact.get((first, second), ())
            close = self._normalized.get((a, b), ())
            held = [self._sentence_sets[s] for s in (a, b) if s in self._sentence_sets]
            if exact or close or held:
                checks.append(ExactCheck(tuple(sorted(exact)), tuple(sorted(close)), tuple(sorted(set().union(*held)))))
            else:
                checks.append(CLEAN_EXACT)
        return checks

    def holds_sentence(self, text: str) -> bool:
        """Whether ``text``, normalized, is a sentence of a test set (what the ``sentence`` level checks)."""
        return normalize_sentence(text) in self._sentence_sets

    def matches(self, pair: STSPair) -> list[str]:
        """Test sets holding this exact pair in either order (the ``pair`` level alone; no index to build)."""
        return sorted(self._exact.get((pair.sentence1, pair.sentence2), ()))

    def without_test_pairs(self, pairs: Iterable[STSPair]) -> list[STSPair]:
        """The pairs found in no test set, exactly and in either order (the paper's filter)."""
        return [pair for pair in pairs if not self.matches(pair)]


def split_clean(
    pairs: Iterable[STSPair], checks: Iterable[PairCheck], level: LeakageLevel
) -> tuple[list[STSPair], list[tuple[STSPair, PairCheck]]]:
    """The pairs a filter at ``level`` keeps, and the removed ones with their checks."""
    kept: list[STSPair] = []
    removed: list[tuple[STSPair, PairCheck]] = []
    for pair, check in zip(pairs, checks, strict=True):
        if check.flagged(level):
            removed.append((pair, check))
        else:
            kept.append(pair)
    return kept, removed
