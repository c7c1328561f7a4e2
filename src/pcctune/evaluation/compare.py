"""Is B better than A? The difference B − A of two sets of runs, or of two models, with a confidence interval, and a
verdict that calls a win (or a loss) only where the interval excludes 0 (``pcctune.results.Difference``).

- ``seed_difference``: two settings, each trained over seeds. Where both sides share at least 2 seeds, the
  t interval of the per-seed differences (a paired t interval, ``scipy.stats.ttest_1samp``): a seed fixes the data
  order and the initialisation on both sides, and pairing takes that part of the noise out. Otherwise Welch's t
  interval of the difference of the two means (Welch 1947, ``scipy.stats.ttest_ind(equal_var=False)``). With fewer
  than 2 runs on a side there is no interval. This measures the seeds' noise: would other seeds change the order?
- ``paired_bootstrap``: two single models scored on the same test pairs. The pairs are resampled with
  replacement, each keeping its gold score and both models' predictions, and the difference of the two
  correlations with gold is recomputed on every resample (Efron & Tibshirani 1993, ch. 14; the BCa interval of
  ``scipy.stats.bootstrap(paired=True)``). This measures the test set's noise, not the seeds'.
  ``paired_bootstrap_mean`` does the same for the mean over several test sets (as ``avg`` is the mean of the
  seven STS tasks), each set resampled on its own.

Differences are in the scores' unit: Spearman's ρ × 100 for the STS tasks, as every record holds them. A score or a
prediction that is not a finite number (NaN, ∞), or predictions that do not vary (no correlation), are refused with an
error rather than compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import ttest_1samp, ttest_ind

from pcctune.correlation import MIN_PAIRS
from pcctune.errors import PcctuneError
from pcctune.evaluation.interval import (
    CONFIDENCE,
    RESAMPLES,
    check_interval_settings,
    correlations_along,
    paired_resamples,
)
from pcctune.results import Difference
from pcctune.seeding import BOOTSTRAP_SEED

Statistic = Literal["spearman", "pearson"]
STATISTICS: dict[str, int] = {"spearman": 0, "pearson": 1}  # the rows of correlations_along
TestSet = tuple[ArrayLike, ArrayLike, ArrayLike]
"""One test set as (gold scores, model A's predictions, model B's predictions), one entry per pair."""
TEST_SET_PARTS = ("the gold scores", "A's predictions", "B's predictions")


def _ends(result: Any, confidence: float) -> tuple[float, float]:
    interval = result.confidence_interval(confidence_level=confidence)
    return float(interval.low), float(interval.high)


def check_finite(values: ArrayLike, what: str) -> np.ndarray:
    """``values`` as a float array; a ``PcctuneError`` naming ``what`` where one of them is NaN or infinite."""
    array = np.asarray(values, dtype=np.float64).ravel()
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise PcctuneError(
            f"{what}: {bad.size} of {array.size} values are not finite numbers (the first, at {bad[0]}, is "
            f"{array[bad[0]]}); a comparison needs finite scores"
        )
    return array


MIN_PAIRED_SEEDS = 2
"""The fewest seeds both sides must share for a comparison to pair its runs by seed."""


def paired_seeds(a: Iterable[int], b: Iterable[int]) -> list[int]:
    """The seeds a comparison pairs A and B on (given each side's seeds): those both sides ran, where there are at
    least ``MIN_PAIRED_SEEDS``; otherwise none (the comparison is unpaired, over every run)."""
    shared = sorted(set(a) & set(b))
    return shared if len(shared) >= MIN_PAIRED_SEEDS else []


def seed_difference(a: Mapping[int, float], b: Mapping[int, float], confidence: float = CONFIDENCE) -> Difference:
    """B − A of two sets of runs, each given as ``{seed: score}``, with its ``confidence`` interval over seeds.

    Paired by seed (the t interval of ``b[seed] − a[seed]`` over the seeds both share, the others left out:
    ``paired_seeds``) where the two sides share at least 2 seeds; otherwise the difference of the means with Welch's t
    interval (unequal variances). With fewer than 2 runs on a side, ``low``, ``high`` and the verdict are ``None``.
    Runs whose scores do not spread at all give the point itself as the interval. A score that is not a finite number
    is a ``PcctuneError``.

    Examples:
        >>> pearson = {1: 80.46, 2: 80.31, 3: 80.62, 4: 80.40, 5: 80.58}  # {test seed: 7-task average}, made up
        >>> cosine_mse = {1: 80.58, 2: 80.21, 3: 80.70, 4: 80.35, 5: 80.45}
        >>> d = seed_difference(cosine_mse, pearson)  # Pearson − cosine-MSE, paired by seed
        >>> f"{d.mean:+.2f} [{d.low:+.2f}, {d.high:+.2f}] {d.method}: {d.verdict}"
        '+0.02 [-0.12, +0.15] paired t: tie'
    """
    check_interval_settings(confidence)
    if not a or not b:
        raise PcctuneError(f"a comparison needs runs on both sides (A has {len(a)}, B has {len(b)})")
    for side, scores in (("A", a), ("B", b)):
        for seed, value in scores.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise PcctuneError(f"{side}: the score of seed {seed} is {value!r}; a comparison needs finite numbers")
    shared = paired_seeds(a, b)
    ends: tuple[float | None, float | None]
    method: str | None
    if shared:
        differences = np.array([b[seed] - a[seed] for seed in shared], dtype=np.float64)
        mean, n_a, n_b, method = float(differences.mean()), len(shared), len(shared), "paired t"
        ends = (mean, mean) if np.ptp(differences) == 0 else _ends(ttest_1samp(differences, 0.0), confidence)
    else:
        runs_a, runs_b = np.array(list(a.values()), dtype=np.float64), np.array(list(b.values()), dtype=np.float64)
        mean, n_a, n_b, method = float(runs_b.mean() - runs_a.mean()), len(runs_a), len(runs_b), "Welch t"
        if min(n_a, n_b) < 2:
            ends, method = (None, None), None
        elif np.ptp(runs_a) == np.ptp(runs_b) == 0:
            ends = (mean, mean)
        else:
            ends = _ends(ttest_ind(runs_b, runs_a, equal_var=False), confidence)
    return Difference(mean=mean, low=ends[0], high=ends[1], confidence=confidence, method=method, n_a=n_a, n_b=n_b)


def _difference(statistic: Statistic) -> Callable[..., np.ndarray]:
    """corr(B, gold) − corr(A, gold) × 100, vectorized along ``axis`` as ``scipy.stats.bootstrap`` calls it."""
    if statistic not in STATISTICS:
        raise PcctuneError(f"unknown statistic {statistic!r}; choose from {', '.join(STATISTICS)}")
    row = STATISTICS[statistic]

    def difference(gold: np.ndarray, a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return correlations_along(b, gold, axis)[row] - correlations_along(a, gold, axis)[row]

    return difference


def _bootstrap(
    test_set: TestSet, statistic: Statistic, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[Difference, np.ndarray]:
    """One test set's paired bootstrap: its ``Difference`` and the resampled differences."""
    check_interval_settings(confidence, resamples)
    arrays = tuple(check_finite(values, what) for values, what in zip(test_set, TEST_SET_PARTS, strict=True))
    sizes = [len(values) for values in arrays]
    if len(set(sizes)) != 1:
        raise PcctuneError(f"gold and both predictions must score the same pairs; got {', '.join(map(str, sizes))}")
    if sizes[0] < MIN_PAIRS:
        raise PcctuneError(f"a bootstrap over test pairs needs at least {MIN_PAIRS} pairs; got {sizes[0]}")
    for values, what in zip(arrays, TEST_SET_PARTS, strict=True):
        if np.ptp(values) == 0:
            raise PcctuneError(f"{what} are all {values[0]:g}: they have no correlation to compare")
    difference = _difference(statistic)
    result = paired_resamples(arrays, difference, resamples, confidence, rng)  # two identical models: see below
    resampled = result.bootstrap_distribution
    low: float | None
    high: float | None
    if not np.all(np.isfinite(resampled)):  # a resample of a few pairs with no correlation (a constant column)
        low = high = None
    elif np.ptp(resampled) == 0:  # every resample gives the same difference: the interval is that value
        low = high = float(resampled[0])
    else:
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    mean = float(difference(*arrays))
    n = sizes[0]
    return Difference(
        mean=mean,
        low=low,
        high=high,
        confidence=confidence,
        method="paired bootstrap",
        n_a=n,
        n_b=n,
        resamples=resamples,
    ), resampled


def paired_bootstrap(
    gold: ArrayLike,
    predicted_a: ArrayLike,
    predicted_b: ArrayLike,
    statistic: Statistic = "spearman",
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Difference:
    """B − A of two models' correlations with ``gold`` (× 100) on the same test pairs, with its BCa ``confidence``
    interval from ``resamples`` paired resamples of the pairs drawn by a generator seeded with ``seed``.

    ``predicted_a`` and ``predicted_b``: each model's prediction for every pair (e.g. the cosine of its two
    embeddings), in the order of ``gold``. ``statistic``: ``spearman`` (the STS metric) or ``pearson``. Two identical
    predictions give a difference of exactly 0 and the interval [0, 0]: a tie. A test set so small that some
    resample has a constant column (no correlation) has no interval: ``low``, ``high`` and the verdict are ``None``.
    Values that are not finite numbers, or a column that does not vary at all, are a ``PcctuneError``."""
    difference, _ = _bootstrap(
        (gold, predicted_a, predicted_b), statistic, confidence, resamples, np.random.default_rng(seed)
    )
    return difference


def paired_bootstrap_mean(
    test_sets: Sequence[TestSet],
    statistic: Statistic = "spearman",
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[list[Difference], Difference]:
    """``paired_bootstrap`` of every test set (one generator seeded with ``seed``, drawn from in turn), and that of
    the mean of their differences (as ``avg`` is the plain mean of the seven STS tasks).

    Each set is resampled on its own (a stratified bootstrap: the sets are independent samples); the mean's interval
    is the percentile interval of the mean of the sets' resampled differences."""
    if not test_sets:
        raise PcctuneError("a bootstrap of a mean needs at least one test set")
    rng = np.random.default_rng(seed)
    runs = [_bootstrap(test_set, statistic, confidence, resamples, rng) for test_set in test_sets]
    differences = [difference for difference, _ in runs]
    tail = (1 - confidence) / 2
    means = np.mean([resampled for _, resampled in runs], axis=0)
    ends = np.quantile(means, [tail, 1 - tail]) if np.all(np.isfinite(means)) else None
    pairs = sum(difference.n_a for difference in differences)
    mean = Difference(
        mean=math.fsum(d.mean for d in differences) / len(differences),
        low=None if ends is None else float(ends[0]),
        high=None if ends is None else float(ends[1]),
        confidence=confidence,
        method="paired bootstrap",
        n_a=pairs,
        n_b=pairs,
        resamples=resamples,
    )
    return differences, mean
