"""A paired bootstrap confidence interval of an STS score (Efron & Tibshirani 1993, ch. 14; ``scipy.stats.bootstrap``).

The pairs of a test set are resampled with replacement (a pair keeps its cosine and its gold score together), each
resample is scored by Spearman's ρ and Pearson's r, and the interval is scipy's bias-corrected and accelerated
(BCa) interval of those scores. Both statistics are computed for all resamples at once: Spearman as the Pearson
correlation of average ranks (``scipy.stats.rankdata``), which is what ``scipy.stats.spearmanr`` computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy.stats import bootstrap, rankdata

from pcctune.correlation import MIN_PAIRS
from pcctune.errors import PcctuneError
from pcctune.results import Interval

CONFIDENCE = 0.95
RESAMPLES = 9999
METHOD = "BCa"
BATCH = 500  # resamples scored at once: bounds memory to a few arrays of BATCH × pairs floats


def check_interval_settings(confidence: float, resamples: int = RESAMPLES) -> None:
    """Refuse a ``confidence`` outside (0, 1) (95 % is 0.95) or fewer than one resample, before any work."""
    if not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise PcctuneError(f"confidence is a fraction between 0 and 1 (0.95 for 95 %), not {confidence!r}")
    if not isinstance(resamples, int) or resamples < 1:
        raise PcctuneError(f"resamples is a whole number of at least 1, not {resamples!r}")


def _pearson(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    x = x - x.mean(axis=axis, keepdims=True)
    y = y - y.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant resample is NaN, as scipy's own
        return (x * y).sum(axis=axis) / np.sqrt((x * x).sum(axis=axis) * (y * y).sum(axis=axis))


def correlations_along(cosines: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman and Pearson (× 100) along ``axis``, stacked on a new first axis."""
    spearman = _pearson(rankdata(cosines, axis=axis), rankdata(gold, axis=axis), axis)
    return np.stack([spearman, _pearson(cosines, gold, axis)]) * 100


class Ends(NamedTuple):
    """An interval's ends, each one per component of the statistic (NaN where undefined)."""

    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Resamples:
    """The statistic of every resample (last axis) and its BCa interval."""

    bootstrap_distribution: np.ndarray
    confidence_interval: Ends


def paired_resamples(
    arrays: tuple[np.ndarray, ...],
    statistic: Any,
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> Resamples:
    """scipy's paired, vectorized bootstrap of ``statistic`` over the pairs of ``arrays`` (`BATCH` resamples at a
    time) and its BCa interval; NaN ends where that is undefined: a resample with no score (a constant column) or a
    score that does not vary across the resamples.

    scipy warns of such degenerate distributions, and only a process-wide filter (not one thread's) could hide the
    warning, so they are told apart here instead: scipy draws the resamples by its percentile method first (given 0
    for a missing score, it has nothing to warn of), then computes the BCa interval of those same resamples only
    where it is defined."""
    scores: list[np.ndarray] = []

    def recorded(*samples: np.ndarray, axis: int) -> np.ndarray:
        values = np.asarray(statistic(*samples, axis=axis))
        scores.append(values)
        return np.where(np.isfinite(values), values, 0.0)

    common: dict[str, Any] = {"batch": BATCH, "vectorized": True, "paired": True, "confidence_level": confidence}
    drawn = bootstrap(arrays, recorded, n_resamples=resamples, method="percentile", rng=rng, **common)
    distribution = np.concatenate(scores, axis=-1)
    if not (np.all(np.isfinite(distribution)) and np.all(np.ptp(distribution, axis=-1) > 0)):
        undefined = np.full(distribution.shape[:-1], np.nan)
        return Resamples(distribution, Ends(undefined, undefined))
    result = bootstrap(arrays, statistic, n_resamples=0, bootstrap_result=drawn, method=METHOD, **common)
    low, high = result.confidence_interval
    return Resamples(distribution, Ends(np.asarray(low), np.asarray(high)))


def bootstrap_interval(
    cosines: np.ndarray, gold: np.ndarray, seed: int, confidence: float = CONFIDENCE, resamples: int = RESAMPLES
) -> Interval | None:
    """The ``confidence`` interval of Spearman and Pearson × 100 of ``cosines`` against ``gold``, from ``resamples``
    paired resamples drawn by a generator seeded with ``seed``; ``None`` when it is undefined (too few pairs, or
    resamples whose scores are all equal)."""
    if len(gold) < MIN_PAIRS:
        return None
    arrays = (np.asarray(cosines, dtype=np.float64), np.asarray(gold, dtype=np.float64))
    result = paired_resamples(arrays, correlations_along, resamples, confidence, np.random.default_rng(seed))
    low, high = result.confidence_interval
    ends = [float(value) for value in (*low, *high)]
    if not all(math.isfinite(value) for value in ends):
        return None
    return Interval(
        confidence=confidence,
        method=METHOD,
        resamples=resamples,
        seed=seed,
        spearman=(ends[0], ends[2]),
        pearson=(ends[1], ends[3]),
    )
