"""Comparisons over seeds as table cells, for the claims whose tables set settings side by side: each one's 95 %
interval (:func:`difference_cell`) and, where a column reads several at once, Holm's decision over the column with
Bonferroni's simultaneous interval beside it (:func:`holm_cells`)."""

from __future__ import annotations

from collections.abc import Mapping

from pcctune.evaluation.compare import seed_difference
from pcctune.evaluation.multiple import holm_differences, simultaneous_label

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


def holm_note(count: int) -> str:
    """What a :func:`holm_cells` column of ``count`` comparisons shows, for the note under a table."""
    if count == 0:
        return "Holm: no comparison shares two seeds yet"
    comparisons = "comparison" if count == 1 else "comparisons"
    return (
        f"Holm: Holm's step-down decision over the column's {count} {comparisons} (family-wise 5 %), then the "
        f"difference's simultaneous interval ({simultaneous_label(count)}: together they cover at least 95 %); a "
        "difference holds only where Holm rejects, its size only where that interval excludes 0 too"
    )


def holm_cells(family: Mapping[str, tuple[Mapping[int, float], Mapping[int, float]]]) -> dict[str, str]:
    """Each named comparison B − A (``{seed: score}`` a side) of those sharing two or more seeds, as Holm's decision
    over all of them and Bonferroni's simultaneous interval (:func:`pcctune.evaluation.multiple.holm_differences`)."""
    paired = {name: sides for name, sides in family.items() if len(sides[0].keys() & sides[1].keys()) >= 2}
    return {
        name: f"{'rejected' if found.holm.rejected else 'not rejected'}; "
        f"[{found.simultaneous.low:+.2f}, {found.simultaneous.high:+.2f}]"
        for name, found in holm_differences(paired).items()
    }
