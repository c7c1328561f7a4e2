"""Seeded work that leaves the caller's random streams as they were.

``transformers.set_seed`` reseeds Python's ``random``, NumPy's global generator and torch's for the whole process. A
library call that needs determinism, such as building a model whose new layers are drawn at random, seeds inside
``seeded``, which puts back the states of Python's, NumPy's and torch's CPU and CUDA generators on exit (other
accelerators' generators, MPS or XPU, are seeded but not restored).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from pcctune.errors import PcctuneError

DEFAULT_SEED = 42  # a run's seed where its config or command names none (the CLI reads it before torch is imported)
BOOTSTRAP_SEED = 0
MAX_SEED = 2**32 - 1
"""The largest seed NumPy's global generator takes (``transformers.set_seed`` seeds it too): seeds run from 0 to it."""
"""The seed of a bootstrap's resampling where none is given (``pcctune compare --bootstrap``,
``pcctune.evaluation.compare``)."""


@contextmanager
def random_state_kept() -> Iterator[None]:
    """Run the block as it likes with the global generators (a training run seeds them itself); restore the states
    of Python's, NumPy's and torch's CPU and CUDA generators afterwards."""
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with every global generator seeded by ``seed``; restore their states afterwards."""
    from transformers import set_seed

    check_seed(seed)
    with random_state_kept():
        set_seed(seed)
        yield


def check_seed(seed: object) -> None:
    """Refuse in one line a seed the generators do not take: an integer from 0 to ``MAX_SEED``."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise PcctuneError(f"seed {seed!r}: a seed is an integer from 0 to {MAX_SEED}")
