"""``pcctune data download`` and ``pcctune data tasks``: fetch the STS data in SentEval's layout; count and check it.

The values the CLI offers as choices (protocols, leakage levels) are named here too, so the CLI
imports nothing below this layer."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from pcctune.data.cache import senteval_folder
from pcctune.data.download import download, hub_loader, local_loader, release_sets, verify
from pcctune.data.leakage import NEAR_THRESHOLD, PAPER_LEVEL, LeakageLevel
from pcctune.data.nli_download import download_nli
from pcctune.data.pairs import PAIR_SPLIT
from pcctune.data.tasks import load_test_tasks
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, PROTOCOLS

__all__ = [
    "DEFAULT_PROTOCOL",
    "PAIR_SPLIT",
    "PROTOCOLS",
    "NEAR_THRESHOLD",
    "PAPER_LEVEL",
    "LeakageLevel",
    "run_download",
    "run_nli_download",
    "run_task_counts",
]


def run_nli_download(dest: Path, local_datasets: Path | None, sha256: str | None, console: Console) -> Path:
    """SimCSE's 275,601 NLI triplets (the papers' stage-1 set) as ``DEST/nli_for_simcse.csv``, hash recorded."""
    target, digest = download_nli(dest, local_datasets, sha256)
    console.print(f"stage-1 triplets -> {target} (sha256 {digest}; use: data: {{source: simcse_csv, path: {target}}})")
    return target


def run_download(dest: Path, local_datasets: Path | None, verify: bool, overwrite: bool, console: Console) -> Path:
    """The 7 STS test sets, STS-B train/dev and SICK from MTEB's pinned Hub datasets (or saved local copies)."""
    loader = local_loader(local_datasets) if local_datasets is not None else hub_loader
    target = download(dest, loader, check=verify, overwrite=overwrite)
    console.print(f"STS data -> {target}  (use: --data {target}  or  export PCCTUNE_DATA={target})")
    return target


def run_task_counts(data: Path | None, check_release: bool, console: Console) -> None:
    """Print the pair count of each test task and its subsets; with ``check_release``, stop with one error unless
    every set (STS12–16, STS-B and SICK splits) has the SentEval release's pair count and content hash."""
    senteval = senteval_folder(data)
    if check_release:
        verify(release_sets(senteval))
    for task in load_test_tasks(senteval):
        detail = ", ".join(f"{s.name} {len(s.pairs)}" for s in task.subsets) if len(task.subsets) > 1 else ""
        console.print(f"{task.name}: {len(task.pairs)} pairs  {detail}")
    if check_release:
        console.print("every set matches the SentEval release (pair counts and content hashes)")
