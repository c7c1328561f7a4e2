"""Many comparisons read together: Holm's step-down correction of paired t tests over seeds, with intervals that
agree with its decisions.

Read at 95 % each, a family of m comparisons calls some win by chance far more often than 5 % of the time. Holm
(1979, "A simple sequentially rejective multiple test procedure") keeps the chance of any false call at α: sort
the m p-values, p(1) ≤ … ≤ p(m); reject while p(k) ≤ α / (m − k + 1), and stop at the first that is not. Its
adjusted p-value is max over j ≤ k of min(1, (m − j + 1) · p(j)), compared with α directly.

Holm gives decisions, not intervals. Each comparison here gets the paired t interval at the level of the step that
decided it: the k-th rejected comparison at 1 − α / (m − k + 1), and every comparison not rejected (r rejected
before the stop) at 1 − α / (m − r), the level at which Holm stopped. An interval then excludes 0 exactly where
Holm rejects (a t interval excludes 0 exactly where its test's p-value is below 1 − its level); the first rejected
comparison's is Bonferroni's, and none is narrower than the uncorrected interval.

A family fixed in advance may be read before all of it has run. ``family_size`` then counts every planned
comparison: those not run yet stand in with p = 1 (never rejected, sorted last), so each comparison read early is
corrected for the whole family, not only for the part that has run, and a comparison rejected early stays rejected
once the rest has run (a later p-value below it would have passed the threshold it passed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import ttest_1samp

from pcctune.errors import PcctuneError
from pcctune.evaluation.compare import MIN_PAIRED_SEEDS, paired_seeds, seed_difference
from pcctune.evaluation.interval import CONFIDENCE
from pcctune.results import Difference


@dataclass(frozen=True)
class HolmStep:
    """One hypothesis of the family: its p-value, Holm's adjusted p-value, whether it is rejected, and the level
    of its interval (``1 − α / (m − k + 1)``, see the module)."""

    p: float
    adjusted: float
    rejected: bool
    confidence: float


def holm(pvalues: Sequence[float], alpha: float = 1 - CONFIDENCE, family_size: int | None = None) -> list[HolmStep]:
    """Holm's step-down correction of ``pvalues`` at family-wise level ``alpha``, in the order given; with
    ``family_size``, over that many planned comparisons of which ``pvalues`` are those run so far (see the module)."""
    if not pvalues:
        return []
    if not 0 < alpha < 1 or any(not 0 <= p <= 1 for p in pvalues):
        raise PcctuneError(f"Holm's correction needs 0 < alpha < 1 and p-values in [0, 1]; got {alpha}, {pvalues}")
    if family_size is not None and family_size < len(pvalues):
        raise PcctuneError(f"a family of {family_size} planned comparisons cannot hold {len(pvalues)} p-values")
    if family_size is not None:
        return holm([*pvalues, *[1.0] * (family_size - len(pvalues))], alpha)[: len(pvalues)]
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted: dict[int, float] = {}
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * pvalues[i]))
        adjusted[i] = running
    rejected = 0
    while rejected < m and pvalues[order[rejected]] <= alpha / (m - rejected):
        rejected += 1
    levels = {i: 1 - alpha / (m - min(k, rejected)) for k, i in enumerate(order)}
    rank = {i: k for k, i in enumerate(order)}
    return [HolmStep(pvalues[i], adjusted[i], rank[i] < rejected, levels[i]) for i in range(m)]


def paired_p(a: Mapping[int, float], b: Mapping[int, float]) -> float:
    """The two-sided p-value of the paired t test of B − A over the seeds both share (at least 2); differences that
    do not spread at all give 1 where they are 0 and 0 otherwise."""
    shared = paired_seeds(a, b)
    if not shared:
        raise PcctuneError(f"a paired test needs at least {MIN_PAIRED_SEEDS} shared seeds; got {len(set(a) & set(b))}")
    differences = np.array([b[seed] - a[seed] for seed in shared], dtype=np.float64)
    if np.ptp(differences) == 0:
        return 1.0 if differences[0] == 0 else 0.0
    return float(ttest_1samp(differences, 0.0).pvalue)


@dataclass(frozen=True)
class Corrected:
    """One comparison of a family: the uncorrected paired interval, Holm's step and the interval at its level."""

    plain: Difference
    holm: HolmStep
    corrected: Difference


def holm_differences(
    family: Mapping[str, tuple[Mapping[int, float], Mapping[int, float]]],
    alpha: float = 1 - CONFIDENCE,
    family_size: int | None = None,
) -> dict[str, Corrected]:
    """Each named comparison ``(a, b)`` (``{seed: score}`` each, paired by seed) as B − A: its paired t interval at
    ``1 − alpha`` and the same interval at the level Holm's correction of the whole family gives it (of
    ``family_size`` planned comparisons, where only some have run)."""
    names = list(family)
    plain = {name: seed_difference(*family[name], confidence=1 - alpha) for name in names}  # checks the scores first
    steps = holm([paired_p(*family[name]) for name in names], alpha, family_size)
    return {
        name: Corrected(
            plain=plain[name],
            holm=step,
            corrected=seed_difference(*family[name], confidence=step.confidence),
        )
        for name, step in zip(names, steps, strict=True)
    }
