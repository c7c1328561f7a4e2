"""``pcctune sweep --grow``: the winner trained again at longer schedules, and at a smaller learning rate with a long
one, so that a method is not compared at a schedule it had not finished.

The growth is the one the leakage comparison fixed before its grown runs, the same for every method
(``reproductions/leakage/README.md``, the growth rule): the winner's last-stage schedule at 2× and 4× (its warm-up
ratio kept, so the warm-up grows with it), and at 4× with half its learning rate (a search that pairs small rates
with short schedules never tries a small rate with a long one); where a 4× run leads on dev, that one grows once more
to 8× at its own rate. Each is chosen again on dev among all of them, the search's own winner included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pcctune.training.config import RunConfig

FIRST_FACTORS = (2, 4)
"""The first multiples of the winner's schedule, at its own learning rate."""
HALF_RATE_FACTOR = 4
"""The multiple of the schedule trained at half the winner's learning rate."""
LAST_FACTOR = 8
"""A 4× run that leads grows once more to this multiple (at its own rate); a grown winner here is the sweep's limit."""


@dataclass(frozen=True)
class Multiple:
    """A grown run: the winner's last-stage schedule × ``factor``, at half its learning rate if ``half_rate``."""

    factor: int
    half_rate: bool = False

    @property
    def label(self) -> str:
        """Its name in ``sweep.json`` and its folder under ``OUTPUT/grown`` (``x4h``: 4× at half the rate)."""
        return f"x{self.factor}{'h' * self.half_rate}"

    def describe(self) -> str:
        """In words, for the log: ``4×`` or ``4× at half the learning rate``."""
        return f"{self.factor}×" + (" at half the learning rate" if self.half_rate else "")

    def params(self, params: dict[str, Any], config: RunConfig) -> dict[str, Any]:
        """The winner's ``params`` (``config`` built from them) with this multiple's schedule and learning rate."""
        key, length = schedule(config)
        grown = {**params, key: length * self.factor}
        if self.half_rate:
            grown[learning_rate_key(config)] = config.stages[-1].learning_rate / 2
        return grown

    @property
    def grows_further(self) -> Multiple | None:
        """The next growth where this one leads (4× → 8×, at the same rate); ``None`` past the first factors."""
        return Multiple(LAST_FACTOR, self.half_rate) if self.factor == FIRST_FACTORS[-1] else None


FIRST_GROWTH = (*(Multiple(factor) for factor in FIRST_FACTORS), Multiple(HALF_RATE_FACTOR, half_rate=True))
"""Every winner's first grown runs."""
SEARCHED = Multiple(1)
"""The search's own winner, as it was found."""


@dataclass
class Growth:
    """``--grow``'s runs: the dotted keys of the schedule and the learning rate it grows, each run's dev score (by
    its label, ``x1`` the search's winner) and the label of the run chosen on dev."""

    key: str
    rate_key: str
    scores: dict[str, float | None]
    chosen: str

    @classmethod
    def of(cls, config: RunConfig, tried: dict[Multiple, float | None]) -> Growth:
        """The growth of the winner whose config is ``config``, from each run's dev score."""
        scores = {multiple.label: dev for multiple, dev in tried.items()}
        return cls(schedule(config)[0], learning_rate_key(config), scores, leading(tried).label)

    def grown_keys(self) -> list[str]:
        """The keys whose chosen values come from the growth rather than the search's space (none where the search's
        own winner, ``x1``, is chosen)."""
        chosen = parse(self.chosen)
        return [] if chosen.factor == 1 else [self.key] + ([self.rate_key] if chosen.half_rate else [])

    @property
    def at_limit(self) -> bool:
        """Whether the run chosen is one at ``LAST_FACTOR``: still leading where the growth stops."""
        return parse(self.chosen).factor == LAST_FACTOR

    def line(self) -> str:
        """Each run's dev score and the one chosen, in one line."""
        tried = "; ".join(
            f"{parse(label).describe()} dev {'—' if dev is None else f'{dev:.4f}'}"
            for label, dev in self.scores.items()
        )
        return f"grown ({self.key}): {tried}; chosen {parse(self.chosen).describe()}"


def parse(label: str) -> Multiple:
    """The multiple a label names (``x4h``)."""
    return Multiple(int(label[1:].rstrip("h")), label.endswith("h"))


def schedule(config: RunConfig) -> tuple[str, float]:
    """The dotted key of the last stage's schedule and its length: ``max_steps`` where the stage counts steps,
    else ``epochs``."""
    index, stage = len(config.stages) - 1, config.stages[-1]
    return (
        (f"stages.{index}.max_steps", stage.max_steps)
        if stage.max_steps > 0
        else (f"stages.{index}.epochs", stage.epochs)
    )


def learning_rate_key(config: RunConfig) -> str:
    """The dotted key of the last stage's learning rate, the one a grown search halves."""
    return f"stages.{len(config.stages) - 1}.learning_rate"


def leading(tried: dict[Multiple, float | None]) -> Multiple:
    """The run whose dev score is highest (of equals the shortest, then the one at its own rate; a run without a
    score never leads)."""
    return max(
        tried,
        key=lambda multiple: (
            tried[multiple] if tried[multiple] is not None else -math.inf,
            -multiple.factor,
            not multiple.half_rate,
        ),
    )
