"""Many comparisons read together: Holm's step-down decisions over paired t tests over seeds, and Bonferroni's
simultaneous intervals beside them.

Read at 95 % each, a family of m comparisons calls some win by chance far more often than 5 % of the time. What each
reading here guarantees, for a family of m comparisons at family-wise level α (each a paired t test over seeds, so
each guarantee holds as far as the t model does):

- **the uncorrected interval** (``Corrected.plain``): the paired t interval at 1 − α. Each covers its own
  difference 95 % of the time; nothing is said of the family.
- **Holm's decisions** (`holm`, ``Corrected.holm``): Holm (1979, "A simple sequentially rejective multiple
  test procedure") sorts the m p-values, p(1) ≤ … ≤ p(m), and rejects while p(k) ≤ α / (m − k + 1), stopping at the
  first that is not; its adjusted p-value is max over j ≤ k of min(1, (m − j + 1) · p(j)), compared with α directly.
  The chance of any false rejection in the family is at most α. A decision is a sign, not an interval: the
  intervals compatible with Holm's decisions (Strassburger and Bretz 2008, "Compatible simultaneous lower
  confidence bounds for the Holm procedure and other Bonferroni-based closed tests", Statistics in Medicine 27)
  give a rejected comparison only its sign (its bound is 0) unless every hypothesis of the family is rejected. The
  t interval at the level of the step that rejected a comparison, 1 − α / (m − k + 1), is no such interval: read
  together, those intervals have no coverage guarantee, and none is given here.
- **Bonferroni's simultaneous interval** (`bonferroni_confidence`, ``Corrected.simultaneous``): every
  comparison's paired t interval at 1 − α / m. By Bonferroni's inequality all m intervals cover their differences
  together with probability at least 1 − α, so an interval that excludes 0 is a win the whole family vouches for,
  with its size. It is never narrower than the uncorrected interval; where it excludes 0, Holm rejects too (p ≤
  α / m), while Holm may reject a comparison whose simultaneous interval still holds 0.

A family fixed in advance may be read before all of it has run. ``family_size`` then counts every planned
comparison: for Holm, those not run yet stand in with p = 1 (never rejected, sorted last), so each comparison read
early is corrected for the whole family, not only for the part that has run, and a comparison rejected early stays
rejected once the rest has run (a later p-value below it would have passed the threshold it passed); for
Bonferroni, m is the planned family's size, so the intervals read early keep their joint coverage.
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
    """Holm's decision on one hypothesis of the family: its p-value, Holm's adjusted p-value and whether it is
    rejected (a sign, not an interval: see the module)."""

    p: float
    adjusted: float
    rejected: bool


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
    rank = {i: k for k, i in enumerate(order)}
    return [HolmStep(pvalues[i], adjusted[i], rank[i] < rejected) for i in range(m)]


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


def bonferroni_confidence(family_size: int, alpha: float = 1 - CONFIDENCE) -> float:
    """The level of each of Bonferroni's simultaneous intervals over ``family_size`` comparisons, ``1 − alpha / m``:
    together they cover every difference of the family with probability at least ``1 − alpha``."""
    if family_size < 1 or not 0 < alpha < 1:
        raise PcctuneError(f"Bonferroni's intervals need a family of 1 or more and 0 < alpha < 1; got {family_size}")
    return 1 - alpha / family_size


def simultaneous_label(family_size: int, alpha: float = 1 - CONFIDENCE) -> str:
    """Bonferroni's simultaneous intervals named as they are printed: method, level and family, e.g.
    ``Bonferroni 99.375 % simultaneous, family of 8``."""
    level = 100 * bonferroni_confidence(family_size, alpha)
    return f"Bonferroni {level:.5g} % simultaneous, family of {family_size}"


@dataclass(frozen=True)
class Corrected:
    """One comparison of a family: its uncorrected paired interval, Holm's decision, and Bonferroni's simultaneous
    interval over the whole family (what each guarantees: the module)."""

    plain: Difference
    holm: HolmStep
    simultaneous: Difference
    family_size: int

    @property
    def method(self) -> str:
        """The simultaneous interval's method, level and family, as printed beside it."""
        return simultaneous_label(self.family_size, 1 - self.plain.confidence)

    def decision(self, a: str = "A", b: str = "B") -> str:
        """What the family says of B − A, in words: a win only where Holm's decision rejects, with its size where the
        simultaneous interval excludes 0 too and its sign alone where that interval still holds 0 (the most a bound
        compatible with Holm's decisions gives it); otherwise a tie, with the bound the simultaneous interval sets,
        which is not an equivalence."""
        low, high = self.simultaneous.low, self.simultaneous.high
        if not self.holm.rejected:
            return f"a tie (the simultaneous interval holds 0: the difference lies within [{low:+.2f}, {high:+.2f}])"
        winner = f"{b} wins" if self.plain.mean > 0 else f"{a} wins"
        if self.simultaneous.verdict == "tie":
            return f"{winner} by Holm's decision, its sign only (the simultaneous interval holds 0)"
        return f"{winner} by Holm's decision, the simultaneous interval excluding 0"


def holm_differences(
    family: Mapping[str, tuple[Mapping[int, float], Mapping[int, float]]],
    alpha: float = 1 - CONFIDENCE,
    family_size: int | None = None,
) -> dict[str, Corrected]:
    """Each named comparison ``(a, b)`` (``{seed: score}`` each, paired by seed) as B − A: its paired t interval at
    ``1 − alpha``, Holm's decision over the whole family, and Bonferroni's simultaneous interval at ``1 − alpha / m``
    (`simultaneous_label` names it), ``m`` the family's size: ``family_size`` planned comparisons where only
    some have run, else those given.

    Examples:
        >>> pearson = {1: 80.46, 2: 80.31, 3: 80.62, 4: 80.40, 5: 80.58}  # {test seed: 7-task average}, made up
        >>> cosine_mse = {1: 80.58, 2: 80.21, 3: 80.70, 4: 80.35, 5: 80.45}
        >>> contrastive = {1: 79.20, 2: 79.02, 3: 79.51, 4: 79.18, 5: 79.25}
        >>> family = {"cosine-MSE": (cosine_mse, pearson), "contrastive": (contrastive, pearson)}
        >>> corrected = holm_differences(family, family_size=8)  # 8 comparisons planned, 2 of them run
        >>> corrected["cosine-MSE"].method
        'Bonferroni 99.375 % simultaneous, family of 8'
        >>> corrected["cosine-MSE"].decision("cosine-MSE", "Pearson")
        'a tie (the simultaneous interval holds 0: the difference lies within [-0.24, +0.28])'
        >>> corrected["contrastive"].decision("the contrastive stage 2", "Pearson")
        "Pearson wins by Holm's decision, the simultaneous interval excluding 0"
    """
    names = list(family)
    if not names:
        return {}
    plain = {name: seed_difference(*family[name], confidence=1 - alpha) for name in names}  # checks the scores first
    steps = holm([paired_p(*family[name]) for name in names], alpha, family_size)
    size = family_size or len(names)
    level = bonferroni_confidence(size, alpha)
    return {
        name: Corrected(plain[name], step, seed_difference(*family[name], confidence=level), size)
        for name, step in zip(names, steps, strict=True)
    }
