"""The bound on real data: each test set's two-valued ceiling, and a plot of both bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pcctune.data.sts import STSTask
from pcctune.data.tasks import SHORT_NAMES
from pcctune.evaluation.bound import EXACT_LIMIT, PAPER_LIMIT, best_two_valued_spearman, binary_bound
from pcctune.plotting import save_figure, subplots


def dataset_ceilings(tasks: list[STSTask]) -> dict[str, dict[str, Any]]:
    """Per task (STS12–16 as the 'all' concatenation, as evaluated): the best two-valued ρ × 100."""
    rows: dict[str, dict[str, Any]] = {}
    for task in tasks:
        gold = np.array([p.score for p in task.pairs])
        rho, k = best_two_valued_spearman(gold)
        rows[task.name] = {
            "n": len(gold),
            "distinct_scores": int(len(np.unique(gold))),
            "ceiling": rho * 100,
            "high_pairs": k,
            "formula_exact": binary_bound(len(gold)).exact * 100,
        }
    rows["avg"] = {"ceiling": float(np.mean([r["ceiling"] for r in rows.values()]))}
    return rows


def plot_bounds(ceilings: dict[str, dict[str, Any]] | None, model_scores: dict[str, float] | None, path: Path) -> Path:
    """Left: both bounds against n. Right: each test set's ceiling next to a model's scores."""
    panels = 2 if ceilings else 1
    figure, axes = subplots(1, panels, figsize=(6 * panels, 3.8), squeeze=False)
    ns = np.unique(np.logspace(np.log10(2), 4, 300).astype(int))
    bounds = [binary_bound(int(n)) for n in ns]
    ax = axes[0][0]
    ax.plot(ns, [b.paper for b in bounds], label="paper: 1 − 6Σd²/(n(n²−1))")
    ax.plot(ns, [b.exact for b in bounds], label="exact: Pearson of tie-averaged ranks")
    ax.axhline(PAPER_LIMIT, ls=":", c="gray")
    ax.axhline(EXACT_LIMIT, ls="--", c="gray")
    ax.set(
        xscale="log",
        xlabel="n pairs",
        ylabel="best Spearman of a binary scorer",
        ylim=(0.85, 0.91),
        title="Ceiling of two-valued scorers",
    )
    ax.legend(fontsize=8)
    if ceilings:
        ax = axes[0][1]
        names = [name for name in ceilings if name != "avg"] + ["avg"]
        x = np.arange(len(names))
        width = 0.4 if model_scores else 0.6
        ax.bar(
            x - (width / 2 if model_scores else 0),
            [ceilings[n]["ceiling"] for n in names],
            width,
            label="two-valued ceiling (real gold scores)",
        )
        if model_scores:
            ax.bar(x + width / 2, [model_scores.get(n, np.nan) for n in names], width, label="model")
        ax.set_xticks(x, [SHORT_NAMES.get(n, n) for n in names], rotation=30)
        ax.set(ylabel="Spearman × 100", ylim=(50, 100), title="Per test set")
        ax.legend(fontsize=8)
    return save_figure(figure, path)
