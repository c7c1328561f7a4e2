"""Dev sets for checkpoint selection and searches, filtered against every test set.

Nine of SICK's 500 trial pairs are SICK-R test pairs, and 1,131 of STS-B dev's 1,500 pairs are
in STS12–16; a dev set keeps only the pairs found in no test set (both orders).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pcctune.data.leakage import LeakageFilter
from pcctune.data.senteval import load_sick, load_stsb
from pcctune.data.sts import STSPair, STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError

DEV_SETS: dict[str, Callable[[Path], STSTask]] = {
    "sick-trial": lambda root: load_sick(root, "dev"),  # 491 of 500 pairs are in no test set
    "stsb-dev-filtered": lambda root: load_stsb(root, "dev"),  # 369 of 1,500 pairs are in no test set
}


def dev_pairs(kind: str, senteval_dir: Path) -> list[STSPair]:
    """The pairs of dev set ``kind`` minus every pair found in a test set (both orders)."""
    if kind not in DEV_SETS:
        raise PcctuneError(f"unknown dev set {kind!r}; choose from {', '.join(DEV_SETS)}")
    kept, _ = LeakageFilter(load_test_tasks(senteval_dir)).filter(kind, DEV_SETS[kind](senteval_dir).pairs)
    return kept
