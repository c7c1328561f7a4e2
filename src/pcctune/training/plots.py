"""Training curves: loss and dev Spearman against steps, from the trainer's log history."""

from __future__ import annotations

from pathlib import Path

from pcctune.plotting import plt, save_figure


def plot_training(log_history: list[dict], metric: str | None, title: str, path: Path) -> Path:
    """Save a two-panel figure: training loss, and the dev metric (×100) when there is one."""
    losses = [(e["step"], e["loss"]) for e in log_history if "loss" in e]
    dev = [(e["step"], e[metric] * 100) for e in log_history if metric and metric in e]
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    if losses:
        axes[0].plot(*zip(*losses, strict=True), marker=".")
    axes[0].set(title="training loss", xlabel="step", ylabel="loss")
    if dev:
        axes[1].plot(*zip(*dev, strict=True), marker="o", color="tab:green")
        best = max(dev, key=lambda point: point[1])
        axes[1].annotate(f"best {best[1]:.2f} @ {best[0]}", best, textcoords="offset points", xytext=(0, 8), ha="right")
    axes[1].set(title=f"dev Spearman × 100 ({metric or 'none'})", xlabel="step")
    figure.suptitle(title)
    return save_figure(figure, path)
