"""From pair embeddings to the STS metrics: cosine of each pair, then Spearman's ρ and Pearson's r with the
gold scores (``scipy.stats``; ties averaged, as SentEval computes them). The one place this is computed:
test evaluation, dev selection during training, the demonstration search and the report's scatter plot."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.stats import pearsonr, spearmanr

MIN_PAIRS = 3
"""The fewest pairs a test set, a subsample of one or a dev set is scored on and a correlation's bootstrap interval
drawn over: two pairs always give a Spearman's ρ of ±1 and no resampling spread."""


class ScoredPair(Protocol):
    """What a correlation reads of a pair: its two sentences and its gold score (``STSPair`` and the like)."""

    @property
    def sentence1(self) -> str:
        """The pair's first sentence."""

    @property
    def sentence2(self) -> str:
        """The pair's second sentence."""

    @property
    def score(self) -> float:
        """Its gold similarity score."""


@dataclass(frozen=True)
class Correlation:
    """Spearman's ρ and Pearson's r of cosine similarity with gold scores, as fractions in [−1, 1]."""

    spearman: float
    pearson: float


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity in float64."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def pair_cosines(
    vectors: Mapping[str, np.ndarray], pairs: Sequence[ScoredPair], text_of: Callable[[str], str] = str
) -> tuple[np.ndarray, np.ndarray]:
    """The cosine of every pair (its sentences looked up in ``vectors`` as ``text_of(sentence)``) and the gold."""
    a = np.stack([vectors[text_of(p.sentence1)] for p in pairs])
    b = np.stack([vectors[text_of(p.sentence2)] for p in pairs])
    return cosine_rows(a, b), np.array([p.score for p in pairs], dtype=np.float64)


def correlation(cosines: np.ndarray, gold: np.ndarray) -> Correlation:
    """Spearman and Pearson of ``cosines`` with ``gold``."""
    return Correlation(float(spearmanr(cosines, gold).statistic), float(pearsonr(cosines, gold).statistic))


def score_pairs(
    vectors: Mapping[str, np.ndarray], pairs: Sequence[ScoredPair], text_of: Callable[[str], str] = str
) -> Correlation:
    """``correlation`` of the pairs' cosines with their gold scores."""
    return correlation(*pair_cosines(vectors, pairs, text_of))
