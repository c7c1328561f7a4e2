"""The decoder claim's search, the same for every loss: its first points, then its schedule grown where it binds.

A point is a stage-2 learning rate and a number of steps. The first points are the recipe's stage 2 (its steps) at
each searched learning rate (``design.RATE_FACTORS``). A loss whose leading run was best at its last dev evaluation
had not finished its schedule, and the schedule grows, by pcctune's own multiples (``pcctune.orchestration.growth``:
those of ``pcctune sweep --grow`` and the leakage claim, which run 2×, 4× and 4× at half the rate at once) in two
rounds of this claim's own, so that the longest schedules run only where a shorter one still binds:

1. where any loss's first winner was best at its last evaluation, every loss's first winner at 2× its steps (its
   rate; warm-up ratio kept, so the warm-up grows with it);
2. where any loss then leads at 2× and was best at its last evaluation, every loss's first winner at 4× its steps,
   and at 4× with half its rate; a loss whose 4× run leads grows once more, to 8× (``Multiple.grows_further``).

Every loss's winner is then the point with the best dev score among all of its points (the earlier point on a tie:
the recipe's rate first). The rule was fixed before any grown run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pcctune.orchestration.growth import FIRST_FACTORS, HALF_RATE_FACTOR, Multiple
from pcctune.results import RunResult

Point = tuple[float, int]
"""A search point: (stage-2 learning rate, stage-2 steps)."""
ResultOf = Callable[[str, Point], "RunResult | None"]
"""The record of a loss's run at a point, ``None`` while it has none."""
GROWTH_ROUNDS = (
    (Multiple(FIRST_FACTORS[0]),),
    (Multiple(FIRST_FACTORS[1]), Multiple(HALF_RATE_FACTOR, half_rate=True)),
)
"""The growth's two rounds: 2×, then 4× and 4× at half the rate (where round one binds)."""


def best_dev(result: RunResult) -> float:
    value = result.stages[0].best_dev_spearman
    return float("-inf") if value is None else value


def grown(point: Point, multiple: Multiple) -> Point:
    """``point``'s schedule × the multiple's factor, at half its rate where the multiple says so."""
    rate, steps = point
    return (rate / 2 if multiple.half_rate else rate, steps * multiple.factor)


def leader(loss: str, points: Sequence[Point], result_of: ResultOf) -> Point:
    """The point of ``loss`` with the best dev score (the earliest on a tie); every point has its record."""
    scores = [best_dev(_kept(result_of, loss, point)) for point in points]
    return points[scores.index(max(scores))]


def plan(losses: Sequence[str], first: Sequence[Point], result_of: ResultOf) -> dict[str, list[Point]]:
    """Every loss's points that the records call for so far: the first points; once each has its record and they
    bind, the growth's first round; once that round has its records and binds, the second; then 8× for each loss
    whose 4× leads.
    A plan whose points all have records is the whole search (the records call for no more)."""
    points = {loss: list(first) for loss in losses}
    if not _all_kept(points, result_of):
        return points
    base = {loss: leader(loss, first, result_of) for loss in losses}
    if not _still_binds(points, base, result_of):
        return points
    first_round, last_round = GROWTH_ROUNDS
    for loss in losses:
        points[loss] += [grown(base[loss], multiple) for multiple in first_round]
    if not _all_kept(points, result_of) or not _still_binds(points, grown_at(base, first_round[-1]), result_of):
        return points
    for loss in losses:
        points[loss] += [grown(base[loss], multiple) for multiple in last_round]
    if not _all_kept(points, result_of):
        return points
    for loss in losses:
        leading = leader(loss, points[loss], result_of)
        for multiple in last_round:
            further = multiple.grows_further
            if further is not None and leading == grown(base[loss], multiple):
                points[loss].append(grown(base[loss], further))
    return points


def grown_at(base: dict[str, Point], multiple: Multiple) -> dict[str, Point]:
    """Every loss's first winner grown by ``multiple``."""
    return {loss: grown(point, multiple) for loss, point in base.items()}


def _still_binds(points: dict[str, list[Point]], longest: dict[str, Point], result_of: ResultOf) -> bool:
    """Whether any loss leads at its longest point so far and that run was best at its last dev evaluation."""
    for loss, tried in points.items():
        top = longest[loss]
        if leader(loss, tried, result_of) == top and _kept(result_of, loss, top).stages[0].best_at_last_evaluation:
            return True
    return False


def _all_kept(points: dict[str, list[Point]], result_of: ResultOf) -> bool:
    return all(result_of(loss, point) is not None for loss, tried in points.items() for point in tried)


def _kept(result_of: ResultOf, loss: str, point: Point) -> RunResult:
    result = result_of(loss, point)
    if result is None:
        raise ValueError(f"{loss} at {point} has no record")
    return result
