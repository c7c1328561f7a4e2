"""How soft-Spearman's ε shapes the soft ranks (docs/fidelity.md, point 7): a table over ε.

For synthetic batches of n scored pairs (cosines that span about 0.5, as a real batch's do), it prints
the fraction of PAV blocks (1 = hard ranks, no gradient; 1/n = one block, Pearson of the cosines), the
largest block, and how far 1 − loss lies from Pearson(cos, rank(gold)) and from Spearman's ρ; the first
line is the old rule (ε = 0.1 on raw cosines), the others the batch-scaled ε of ``SoftSpearmanLoss``.

    python benchmarks/soft_rank_epsilon.py [--batches 50] [--n 64]     # its table: benchmarks/results/soft_rank_epsilon
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch
from scipy.stats import pearsonr, rankdata, spearmanr

from _common import Benchmark, Measured, Rows, run
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


COLUMNS = ("blocks / n", "largest block / n", "|soft − Pearson(cos)|", "|soft − Spearman|")


def measure(args: argparse.Namespace) -> Measured:
    rng = np.random.default_rng(0)
    data = [batch(rng, args.n) for _ in range(args.batches)]
    rules = [("0.1 on raw cosines (old)", 0.1, lambda c: torch.tensor(c) / 0.1)]
    rules += [(f"{e:g} (batch units)", e, lambda c, e=e: batch_scaled(torch.tensor(c), e)) for e in EPSILONS]
    rows = []
    for label, eps, soft_input in rules:
        values = np.mean([row(soft_input(c), c, g) for c, g in data], axis=0)
        rows.append({"label": label, "eps": eps} | {k: float(v) for k, v in zip(COLUMNS, values, strict=True)})
    return Measured(rows, f"{args.batches} synthetic batches of n = {args.n} pairs, seed 0")


def table(rows: Rows, details: dict[str, Any]) -> str:
    lines = ["| ε | " + " | ".join(COLUMNS) + " |", "|" + " --- |" * (len(COLUMNS) + 1)]
    return "\n".join(lines + [f"| {r['label']} | " + " | ".join(f"{r[c]:.4f}" for c in COLUMNS) + " |" for r in rows])


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--n", type=int, default=64)


QUICK = {"batches": 3, "n": 16}  # --quick: every code path on tiny random models
BENCHMARK = Benchmark.of(__name__, quick=QUICK, output="benchmarks/results/soft_rank_epsilon")

if __name__ == "__main__":
    run(BENCHMARK)
