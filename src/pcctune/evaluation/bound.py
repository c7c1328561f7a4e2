"""The Spearman ceiling of binary (contrastive) classifiers on STS (Pcc-tuning §2.3, Appendix A).

A contrastive model is treated as a two-valued scorer: k pairs "similar", n − k "dissimilar".
With n distinct gold scores and the best such scorer (the top k gold pairs high):

- **The paper's formula.** ρ = 1 − 6Σd²/(n(n²−1)) with d the difference of tie-averaged ranks,
  Σd² = [k(k²−1) + (n−k)((n−k)²−1)] / 12, maximised at k = n/2, giving 1 − (n²−4)/(8(n²−1)) → 0.875.
  That formula is exact only without ties, and a two-valued scorer is nothing but ties.
- **The evaluation's definition.** SentEval and scipy compute Spearman as the Pearson correlation
  of tie-averaged ranks. The predicted ranks are an affine map of the 0/1 indicator, so ρ is the
  point-biserial correlation of the indicator with the gold ranks 1..n:
  cov = k(n−k)/(2n), var(indicator) = k(n−k)/n², var(ranks) = (n²−1)/12, hence
  ρ(k) = √(3k(n−k)/(n²−1)), maximal at k = ⌊n/2⌋: exactly √3/2 ≈ 0.8660 for odd n and
  (√3/2)·n/√(n²−1) for even n, tending to √3/2 (not 0.875).

With real gold scores (which have ties), ``best_two_valued_spearman`` searches every split
of the pairs sorted by gold score: for a fixed number k of "high" predictions, the top k gold
ranks maximise the covariance, so the search over k is exact over all two-valued scorers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

PAPER_LIMIT = 0.875
"""The paper's ceiling as n grows: lim 1 − (n²−4)/(8(n²−1))."""
EXACT_LIMIT = math.sqrt(3) / 2
"""The exact ceiling: reached for every odd n, approached from above for even n."""


def paper_rho(n: int, k: int) -> float:
    """1 − 6Σd²/(n(n²−1)) for the top-k split of n distinct gold scores (the paper's eq. 2–4)."""
    sum_d2 = (k * (k * k - 1) + (n - k) * ((n - k) ** 2 - 1)) / 12
    return 1 - 6 * sum_d2 / (n * (n * n - 1))


def exact_rho(n: int, k: int) -> float:
    """Spearman (Pearson of tie-averaged ranks) of the top-k split of n distinct gold scores."""
    return math.sqrt(3 * k * (n - k) / (n * n - 1))


@dataclass(frozen=True)
class Bound:
    """The two ceilings of a binary scorer on ``n`` pairs: the paper's formula (eq. 2–4) and the exact Spearman of
    tie-averaged ranks, each with the number of "high" predictions that reaches it."""

    n: int
    paper: float
    paper_k: int
    exact: float
    exact_k: int


def binary_bound(n: int) -> Bound:
    """Both ceilings for ``n`` pairs (n ≥ 2), each with its best number of "high" predictions: ⌊n/2⌋ for both, as
    Σd² is convex in k and symmetric about n/2 (the paper's eq. 3) and k(n − k) is largest there (any n, at once)."""
    if n < 2:
        raise ValueError("n must be at least 2")
    k = n // 2
    return Bound(n, paper_rho(n, k), k, exact_rho(n, k), k)


def best_two_valued_spearman(gold: np.ndarray) -> tuple[float, int]:
    """The best ρ any two-valued scorer reaches on these gold scores, and its number of "high" pairs.

    ρ(k) = cov(b, r) / (σ_b σ_r) with r the tie-averaged gold ranks and b the indicator of the k
    highest; prefix sums give every k at once.
    """
    ranks = np.sort(rankdata(gold))[::-1]  # descending: the first k are the "high" pairs
    n = len(ranks)
    k = np.arange(1, n)
    top_sums = np.cumsum(ranks)[:-1]
    mean = ranks.mean()
    cov = top_sums / n - (k / n) * mean
    sd_b = np.sqrt((k / n) * (1 - k / n))
    sd_r = ranks.std()
    if sd_r == 0:
        return 0.0, 0
    rho = cov / (sd_b * sd_r)
    best = int(np.argmax(rho))
    return float(rho[best]), int(k[best])
