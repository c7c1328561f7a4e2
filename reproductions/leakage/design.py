"""The wide search's settings: eight points of a scrambled Sobol sequence (Owen scrambling, ``scipy.stats.qmc``),
fixed by its seed, over a space that holds each loss's good region, the same points for every loss and level.

Learning rate log-uniform on [1e-5, 3e-4] (two significant digits), epochs 1 to 4, batch size 32, 64 or 128,
warm-up ratio uniform on [0, 0.1] (three decimals). Each coordinate of a point in [0, 1)^4 picks its setting: the
learning rate by its logarithm, the others by equal slices of [0, 1). Eight points of a base-2 sequence put one
point in each eighth of every coordinate, so each number of epochs gets two points.
"""

from __future__ import annotations

import math
from typing import Any

from scipy.stats import qmc

SEED = 20_240_601
"""The Sobol sequence's scrambling seed, fixed before any point was trained."""
POINTS = 8
LEARNING_RATES = (1e-5, 3e-4)
EPOCHS = (1, 2, 3, 4)
BATCH_SIZES = (32, 64, 128)
WARMUP = (0.0, 0.1)


def _significant(value: float, digits: int = 2) -> float:
    return round(value, digits - 1 - math.floor(math.log10(value)))


def setting(point: list[float] | tuple[float, ...]) -> dict[str, Any]:
    """The training settings of one point of [0, 1)^4 (learning rate, epochs, batch size, warm-up)."""
    low, high = (math.log10(rate) for rate in LEARNING_RATES)
    return {
        "learning_rate": _significant(10 ** (low + point[0] * (high - low))),
        "epochs": EPOCHS[min(int(point[1] * len(EPOCHS)), len(EPOCHS) - 1)],
        "batch_size": BATCH_SIZES[min(int(point[2] * len(BATCH_SIZES)), len(BATCH_SIZES) - 1)],
        "warmup_ratio": round(WARMUP[0] + point[3] * (WARMUP[1] - WARMUP[0]), 3),
    }


def design(points: int = POINTS, seed: int = SEED) -> tuple[dict[str, Any], ...]:
    """The search's settings: the first ``points`` points of the scrambled Sobol sequence seeded by ``seed``."""
    sample = qmc.Sobol(d=4, scramble=True, seed=seed).random(points)
    return tuple(setting(tuple(float(u) for u in point)) for point in sample)


DESIGN = design()
"""The eight settings every loss is searched over, at every searched level."""
