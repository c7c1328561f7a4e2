"""Growing the wide search where it binds: the rule, fixed before any grown run, the same for every loss, level and
the control.

A cell *binds* where its winner is best at its last step in 3 or more of its 5 test seeds, or its winner has the
longest schedule of the space (its most epochs, or its most steps: epochs over batch size, the cell's training set
being the same for every point) or its smallest learning rate. Only schedule length and learning rate are grown,
never batch size or warm-up. At a level where any cell binds, every loss at that level gets the same growth of its
own winning setting, on the level's search seeds: the setting at 2× and 4× its epochs (warm-up ratio kept, so the
warm-up grows with the schedule), and at ``sentence`` and the control also at half its learning rate and 4× its
epochs. Each loss's winner is then chosen again on dev among all its points (the eight design points and the grown
ones); a winner at 4× grows once more, to 8× (at its own learning rate), and only then may the claim call the
largest schedule tried the limit of the claim for that loss. A winner that changed runs again on test seeds 1–5.

A grown point is named by the design point it grows and how: ``3x2`` (point 3 at twice its epochs), ``3x4``,
``3x4h`` (half the learning rate, 4× the epochs), ``3x8``, ``3x8h``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pcctune.orchestration.growth import FIRST_FACTORS, HALF_RATE_FACTOR, LAST_FACTOR

# The factors are pcctune's own (``pcctune sweep --grow`` grows alike); here the half-rate point is grown only where
# the training set is ``sentence``-sized.
FURTHER = {FIRST_FACTORS[-1]: LAST_FACTOR}
"""A winner at 4× its epochs grows once more, to 8×; a winner at 8× is the limit of the claim."""
LAST_STEP_SEEDS = 3
"""A cell binds where its winner is best at its last step in this many of its test seeds or more."""
_LABEL = re.compile(r"(\d+)x(\d+)(h?)")


@dataclass(frozen=True)
class GrownPoint:
    """A design point's setting with its epochs multiplied by ``factor``, at half its learning rate if ``half_rate``."""

    base: int
    factor: int
    half_rate: bool = False

    @property
    def label(self) -> str:
        return f"{self.base}x{self.factor}{'h' * self.half_rate}"

    @classmethod
    def parse(cls, label: str) -> GrownPoint:
        found = _LABEL.fullmatch(label)
        if found is None:
            raise ValueError(f"not a grown point: {label!r} (e.g. 3x2, 3x4h)")
        return cls(int(found[1]), int(found[2]), bool(found[3]))

    def setting(self, design: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The training settings: the base point's, epochs × ``factor`` (warm-up ratio kept), the learning rate
        halved for a half-rate point."""
        base = design[self.base]
        rate = base["learning_rate"] / 2 if self.half_rate else base["learning_rate"]
        return base | {"epochs": base["epochs"] * self.factor, "learning_rate": rate}

    @property
    def grows_further(self) -> GrownPoint | None:
        """The next growth of this point where it wins (4× → 8×), ``None`` at the limit."""
        factor = FURTHER.get(self.factor)
        return None if factor is None else GrownPoint(self.base, factor, self.half_rate)


Point = int | str
"""A point of a cell's search: a design point's index, or a :class:`GrownPoint`'s label."""


def setting_of(point: Point, design: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The training settings of a design point or a grown point."""
    return dict(design[point]) if isinstance(point, int) else GrownPoint.parse(point).setting(design)


def first_growth(winner: int, half_rate: bool) -> list[GrownPoint]:
    """The points a winning design point grows to first: 2× and 4× its epochs, and (``half_rate``) half its
    learning rate at 4× its epochs."""
    grown = [GrownPoint(winner, factor) for factor in FIRST_FACTORS]
    return grown + ([GrownPoint(winner, HALF_RATE_FACTOR, half_rate=True)] if half_rate else [])


def at_the_edge(setting: dict[str, Any], design: Sequence[dict[str, Any]]) -> bool:
    """Whether ``setting`` has the design's longest schedule (most epochs, or most steps) or its smallest learning
    rate."""
    steps = lambda s: s["epochs"] / s["batch_size"]  # noqa: E731  (the cell's pairs are the same at every point)
    return (
        setting["epochs"] >= max(s["epochs"] for s in design)
        or steps(setting) >= max(map(steps, design))
        or setting["learning_rate"] <= min(s["learning_rate"] for s in design)
    )


def binds(setting: dict[str, Any], last_steps: Sequence[bool], design: Sequence[dict[str, Any]]) -> bool:
    """The rule for one cell: its winner's ``setting`` at the design's edge, or best at its last step
    (``last_steps``, one a test seed) in :data:`LAST_STEP_SEEDS` seeds or more."""
    return at_the_edge(setting, design) or sum(last_steps) >= LAST_STEP_SEEDS
