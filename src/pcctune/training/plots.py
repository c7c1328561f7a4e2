"""Training curves: loss and dev Spearman against steps, from the trainer's log history."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matplotlib.ticker import MaxNLocator

from pcctune.plotting import save_figure, subplots

PANEL_CHARS = 48
"""The longest title line a panel holds whole (a 5-inch panel at matplotlib's default title size); longer lines wrap."""


def plot_training(log_history: list[dict], metric: str | None, title: str, path: Path) -> Path:
    """Save a two-panel figure: training loss, and the dev metric (×100) when there is one. Every point carries a
    marker, so a short run's single evaluation shows; titles wrap rather than run off the panel."""
    losses = [(e["step"], e["loss"]) for e in log_history if "loss" in e]
    dev = [(e["step"], e[metric] * 100) for e in log_history if metric and metric in e]
    figure, axes = subplots(1, 2, figsize=(10, 3.6))
    if losses:
        axes[0].plot(*zip(*losses, strict=True), marker="o", markersize=4)
    axes[0].set(title="training loss", xlabel="step", ylabel="loss")
    if dev:
        axes[1].plot(*zip(*dev, strict=True), marker="o", color="tab:green")
        best = max(dev, key=lambda point: point[1])
        axes[1].annotate(f"best {best[1]:.2f} @ {best[0]}", best, textcoords="offset points", xytext=(0, 8), ha="right")
    axes[1].set(title=_wrapped(f"dev Spearman × 100\n{metric or 'no dev set'}"), xlabel="step")
    for ax in axes:  # steps from 0, whole numbers: a single point sits at its step, not amid fractions
        ax.set_xlim(left=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.suptitle(_wrapped(title, 2 * PANEL_CHARS))
    return save_figure(figure, path)


def _wrapped(text: str, width: int = PANEL_CHARS) -> str:
    """``text`` with each line folded at ``width`` characters (a long metric or file name breaks mid-word)."""
    return "\n".join(textwrap.fill(line, width) for line in text.splitlines())
