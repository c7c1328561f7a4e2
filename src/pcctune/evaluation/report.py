"""Report figures: grouped bars of several runs' scores, predicted-vs-gold scatter plots, and a family of
comparisons as a forest."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pcctune.correlation import correlation
from pcctune.data.tasks import SHORT_NAMES
from pcctune.plotting import save_figure, subplots
from pcctune.results import Difference


def bar_plot(rows: Mapping[str, Mapping[str, float]], section: str, path: Path) -> Path:
    """Grouped bars: one group per task, one bar per run."""
    columns = list(next(iter(rows.values())))
    x = np.arange(len(columns))
    width = 0.8 / len(rows)
    figure, ax = subplots(figsize=(max(7, len(columns) * 1.1), 4))
    for index, (label, values) in enumerate(rows.items()):
        ax.bar(x + (index - (len(rows) - 1) / 2) * width, [values.get(c, np.nan) for c in columns], width, label=label)
    ax.set_xticks(x, [SHORT_NAMES.get(c, c) for c in columns], rotation=20)
    low = min(v for values in rows.values() for v in values.values())
    ax.set(
        ylim=(max(0, low - 10), 100),
        ylabel="Spearman × 100" if section == "sts" else "accuracy",
        title=f"{section.upper()} per task",
    )
    ax.legend(fontsize=8)
    return save_figure(figure, path)


def scatter_plot(cosines: np.ndarray, gold: np.ndarray, title: str, path: Path) -> Path:
    """Predicted cosine against gold score for every pair of one task."""
    figure, ax = subplots(figsize=(5, 4.2))
    ax.scatter(gold, cosines, s=4, alpha=0.35)
    rho = correlation(cosines, gold).spearman * 100
    ax.set(xlabel="gold score", ylabel="cosine similarity", title=f"{title} (Spearman × 100 = {rho:.2f})")
    return save_figure(figure, path)


TITLE_CHARS = 56
"""The widest line of a family plot's title: what the axes of a 7-inch figure hold beside long labels."""


def family_plot(family: Mapping[str, tuple[Difference, Difference]], path: Path, title: str, xlabel: str) -> Path:
    """A family of comparisons as a forest, the first on top: each ``(uncorrected, simultaneous)`` difference's mean
    with its uncorrected interval (thick) and its simultaneous interval over the family (thin, capped), so that a win
    with its size shows as a thin line clear of 0 (``pcctune.evaluation.multiple``)."""
    figure, ax = subplots(figsize=(7, 0.5 * len(family) + 1.4))
    for y, (plain, joint) in enumerate(reversed(list(family.values()))):
        low, high = (
            joint.low if joint.low is not None else plain.mean,
            joint.high if joint.high is not None else plain.mean,
        )
        ax.errorbar(
            plain.mean,
            y,
            xerr=[[plain.mean - low], [high - plain.mean]],
            fmt="none",
            ecolor="gray",
            elinewidth=1,
            capsize=4,
        )
        if plain.low is not None and plain.high is not None:
            ax.plot([plain.low, plain.high], [y, y], c="C0", lw=4, solid_capstyle="butt")
        ax.plot(plain.mean, y, "ko", ms=4)
    ax.axvline(0, ls=":", c="gray")
    ax.set_yticks(range(len(family)), list(reversed(list(family))))
    ax.set(xlabel=xlabel, title=textwrap.fill(title, TITLE_CHARS))  # a long family's name wraps, not cut off
    return save_figure(figure, path)
