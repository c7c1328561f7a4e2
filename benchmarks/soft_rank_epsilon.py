"""How soft-Spearman's ε shapes the soft ranks (docs/fidelity.md, point 7): a table over ε.

For synthetic batches of n scored pairs (cosines that span about 0.5, as a real batch's do), it prints
the fraction of PAV blocks (1 = hard ranks, no gradient; 1/n = one block, Pearson of the cosines), the
largest block, and how far 1 − loss lies from Pearson(cos, rank(gold)) and from Spearman's ρ; the first
line is the old rule (ε = 0.1 on raw cosines), the others the batch-scaled ε of ``SoftSpearmanLoss``.

    python benchmarks/soft_rank_epsilon.py [--batches 50] [--n 64]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from scipy.stats import pearsonr, rankdata, spearmanr

from pcctune.losses.soft_spearman import batch_scaled, isotonic_decreasing, soft_rank

EPSILONS = (0.1, 0.3, 1.0, 2.0, 3.0, 5.0, 10.0)


def batch(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    gold = rng.uniform(0, 5, n)
    return 0.5 + 0.053 * (gold - 2.5) + rng.normal(0, 0.12, n), gold


def row(z: torch.Tensor, cos: np.ndarray, gold: np.ndarray) -> tuple[float, float, float, float]:
    n = len(cos)
    ordered = np.sort(z.numpy())[::-1]
    _, blocks = isotonic_decreasing(ordered - np.arange(n, 0, -1))
    soft = pearsonr(soft_rank(z).numpy(), rankdata(gold)).statistic
    return (
        len(blocks) / n,
        max(end - start for start, end in blocks) / n,
        abs(soft - pearsonr(cos, rankdata(gold)).statistic),
        abs(soft - spearmanr(cos, gold).statistic),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--n", type=int, default=64)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    data = [batch(rng, args.n) for _ in range(args.batches)]
    print("| ε | blocks / n | largest block / n | |soft − Pearson(cos)| | |soft − Spearman| |")
    print("| --- | --- | --- | --- | --- |")
    old = np.mean([row(torch.tensor(c) / 0.1, c, g) for c, g in data], axis=0)
    print("| 0.1 on raw cosines (old) | " + " | ".join(f"{v:.4f}" for v in old) + " |")
    for eps in EPSILONS:
        values = np.mean([row(batch_scaled(torch.tensor(c), eps), c, g) for c, g in data], axis=0)
        print(f"| {eps:g} (batch units) | " + " | ".join(f"{v:.4f}" for v in values) + " |")


if __name__ == "__main__":
    main()
