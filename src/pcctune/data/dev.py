"""Dev sets for checkpoint selection and searches, filtered against every test set.

Nine of SICK's 500 trial pairs are SICK-R test pairs, and 1,131 of STS-B dev's 1,500 pairs are
in STS12–16; a dev set keeps only the pairs found in no test set (both orders).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pcctune.data.leakage import TestIndex
from pcctune.data.senteval import load_sick, load_stsb
from pcctune.data.sts import STSPair, STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError

SINGLE_DEV_SETS: dict[str, Callable[[Path], STSTask]] = {
    "sick-trial": lambda root: load_sick(root, "dev"),  # 491 of 500 pairs are in no test set
    "stsb-dev-filtered": lambda root: load_stsb(root, "dev"),  # 369 of 1,500 pairs are in no test set
}
COMBINED_DEV = "sick-trial+stsb-dev"
"""Both filtered dev sets, each scored on its own and averaged weighted by its size."""
DEV_SETS: dict[str, tuple[str, ...]] = {
    **{name: (name,) for name in SINGLE_DEV_SETS},
    COMBINED_DEV: tuple(SINGLE_DEV_SETS),
}
"""Every dev set a stage or a search can select on → the single sets it is made of."""
MIN_DEV_PAIRS = 2


def dev_parts(dev_set: str, senteval_dir: Path) -> dict[str, list[STSPair]]:
    """Each single set of dev set ``dev_set`` → its pairs minus every pair found in a test set (both orders)."""
    if dev_set not in DEV_SETS:
        raise PcctuneError(f"unknown dev set {dev_set!r}; choose from {', '.join(DEV_SETS)}")
    index = TestIndex(load_test_tasks(senteval_dir))
    parts = {part: index.without_test_pairs(SINGLE_DEV_SETS[part](senteval_dir).pairs) for part in DEV_SETS[dev_set]}
    for part, pairs in parts.items():
        if len(pairs) < MIN_DEV_PAIRS:
            others = ", ".join(name for name in [*DEV_SETS, "none"] if part not in DEV_SETS.get(name, ()))
            raise PcctuneError(
                f"dev set {part!r} keeps {len(pairs)} pairs once the pairs of every test set are removed, and a "
                f"correlation needs at least {MIN_DEV_PAIRS}; choose another dev set ({others})"
            )
    return parts


def size_weighted(scores: Mapping[str, float], parts: Mapping[str, Sequence[STSPair]]) -> float:
    """A dev set's score from its single sets' scores: their mean weighted by pair count.

    A correlation is a within-set statistic and the sets score on different scales, so each set is
    scored on its own and the pairs are never pooled. One set: its own score.
    """
    return float(sum(scores[part] * len(parts[part]) for part in scores) / sum(len(parts[part]) for part in scores))
