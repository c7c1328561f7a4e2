"""The registry of evaluation tasks: the seven STS test sets of the SimCSE/SentEval protocol.

Each ``TaskSpec`` names a task, its short label in tables, and how its test pairs are read.
Everything that lists tasks (evaluation, the leakage filter's test sets, tables, the CLI) draws
from ``STS_TASKS``. The transfer tasks have their own list in ``pcctune.data.transfer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pcctune.correlation import MIN_PAIRS
from pcctune.data.senteval import STS_YEARS, load_sick, load_stsb, sts_year_dir
from pcctune.data.sts import STSSubset, STSTask, read_senteval_sts_year
from pcctune.errors import PcctuneError, unknown


@dataclass(frozen=True)
class TaskSpec:
    """One STS test task: its name, its label in tables, the split scored, and its reader."""

    name: str
    short_name: str
    split: str
    load: Callable[[Path], STSTask]

    @property
    def test_set(self) -> str:
        """How leakage reports name the test data (``STSBenchmark:test``; STS12–16 are all test)."""
        return self.name if self.split == "all" else f"{self.name}:{self.split}"


def _sts_year(year: int) -> TaskSpec:
    name = f"STS{year}"
    return TaskSpec(name, name, "all", lambda root: read_senteval_sts_year(sts_year_dir(root, year), name))


STS_TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        *(_sts_year(year) for year in STS_YEARS),
        TaskSpec("STSBenchmark", "STS-B", "test", lambda root: load_stsb(root, "test")),
        TaskSpec("SICKRelatedness", "SICK-R", "test", lambda root: load_sick(root, "test")),
    )
}
SEVEN_TASKS = tuple(STS_TASKS)
SHORT_NAMES = {spec.name: spec.short_name for spec in STS_TASKS.values()}


def load_task(senteval_dir: Path, name: str) -> STSTask:
    """Load one of the seven evaluation tasks (test data)."""
    if name not in STS_TASKS:
        raise PcctuneError(unknown("STS task", name, list(SEVEN_TASKS)))
    return STS_TASKS[name].load(senteval_dir)


def load_test_tasks(senteval_dir: Path, names: tuple[str, ...] = SEVEN_TASKS) -> list[STSTask]:
    """The test side of every task: what training data must never contain."""
    return [load_task(senteval_dir, name) for name in names]


def subsample_task(task: STSTask, count: int, seed: int = 0) -> STSTask:
    """``count`` pairs of ``task`` drawn uniformly without replacement (seeded), as one subset.

    One subset, because the headline number of a multi-subset task (STS12–16) is ρ on the
    concatenation of its subsets, and a small sample would leave some subsets too small for a
    correlation of their own. For quick comparisons on slow hardware only: Spearman on a
    subsample is a noisy estimate of the protocol's number (the same subsample for every model
    makes the comparison paired).
    """
    if count < MIN_PAIRS:
        raise PcctuneError(f"a subsample needs at least {MIN_PAIRS} pairs, got {count}")
    pairs = task.pairs
    keep = sorted(np.random.default_rng(seed).permutation(len(pairs))[:count].tolist())
    return STSTask(task.name, [STSSubset(f"sample of {len(keep)}", [pairs[i] for i in keep], task.files)])
