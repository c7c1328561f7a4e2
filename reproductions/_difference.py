"""One comparison over seeds as a table cell, for the claims whose tables set two settings side by side."""

from __future__ import annotations

from collections.abc import Mapping

from pcctune.evaluation.compare import seed_difference

DIFFERENCE_NOTE = "mean over paired seeds with its 95 % t interval; a tie where the interval holds 0"
"""What a :func:`difference_cell` shows, for the note under a table."""


def difference_cell(a: Mapping[int, float], b: Mapping[int, float]) -> str:
    """B − A, each side ``{seed: score}``, with its 95 % t interval: over the seeds both share where they share two
    or more, else Welch's (:func:`pcctune.evaluation.compare.seed_difference`); ``—`` where a side has fewer than two
    runs (no interval)."""
    difference = seed_difference(a, b)
    if difference.low is None or difference.high is None:
        return "—"
    return f"{difference.mean:+.2f} [{difference.low:+.2f}, {difference.high:+.2f}]"
