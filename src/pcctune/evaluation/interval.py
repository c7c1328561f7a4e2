"""A paired bootstrap confidence interval of an STS score (Efron & Tibshirani 1993, ch. 14; ``scipy.stats.bootstrap``).

The pairs of a test set are resampled with replacement (a pair keeps its cosine and its gold score together), each
resample is scored by Spearman's ρ and Pearson's r, and the interval is scipy's bias-corrected and accelerated
(BCa) interval of those scores. Both statistics are computed for all resamples at once: Spearman as the Pearson
correlation of average ranks (``scipy.stats.rankdata``), which is what ``scipy.stats.spearmanr`` computes.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.stats import bootstrap, rankdata

from pcctune.results import Interval

CONFIDENCE = 0.95
RESAMPLES = 9999
METHOD = "BCa"
BATCH = 500  # resamples scored at once: bounds memory to a few arrays of BATCH × pairs floats


def _pearson(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    x = x - x.mean(axis=axis, keepdims=True)
    y = y - y.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant resample is NaN, as scipy's own
        return (x * y).sum(axis=axis) / np.sqrt((x * x).sum(axis=axis) * (y * y).sum(axis=axis))


def correlations_along(cosines: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman and Pearson (× 100) along ``axis``, stacked on a new first axis."""
    spearman = _pearson(rankdata(cosines, axis=axis), rankdata(gold, axis=axis), axis)
    return np.stack([spearman, _pearson(cosines, gold, axis)]) * 100


def paired_resamples(
    arrays: tuple[np.ndarray, ...],
    statistic: Any,
    resamples: int,
    confidence: float,
    rng: np.random.Generator,
) -> Any:
    """scipy's paired, vectorized bootstrap of ``statistic`` over the pairs of ``arrays`` (BCa, `BATCH`
    resamples at a time); scipy's warning of a degenerate distribution is silenced (a non-finite end or a
    distribution with no spread says the same, and callers read those)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bootstrap(
            arrays,
            statistic,
            n_resamples=resamples,
            batch=BATCH,
            vectorized=True,
            paired=True,
            confidence_level=confidence,
            method=METHOD,
            rng=rng,
        )


def bootstrap_interval(
    cosines: np.ndarray, gold: np.ndarray, seed: int, confidence: float = CONFIDENCE, resamples: int = RESAMPLES
) -> Interval | None:
    """The ``confidence`` interval of Spearman and Pearson × 100 of ``cosines`` against ``gold``, from ``resamples``
    paired resamples drawn by a generator seeded with ``seed``; ``None`` when it is undefined (too few pairs, or
    resamples whose scores are all equal)."""
    if len(gold) < 3:
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
