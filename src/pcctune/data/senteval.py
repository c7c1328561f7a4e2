"""The seven STS tasks of the SimCSE/SentEval protocol, read from a SentEval ``data`` folder.

STS12–16 test sets (all subsets), STS Benchmark (``sts-{train,dev,test}.csv``) and
SICK-R (``SICK_train.txt``, ``SICK_trial.txt``, ``SICK_test_annotated.txt``).
"""

from __future__ import annotations

from pathlib import Path

from pcctune.data.sts import (
    STSSubset,
    STSTask,
    read_senteval_sts_year,
    read_sick_txt,
    read_stsb_csv,
)
from pcctune.errors import PcctuneError

STS_YEARS = {f"STS1{i}": f"STS1{i}-en-test" for i in range(2, 7)}
SEVEN_TASKS = (*STS_YEARS, "STSBenchmark", "SICKRelatedness")
STSB_SPLITS = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
SICK_SPLITS = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def _sts_dir(senteval_dir: Path) -> Path:
    return senteval_dir / "downstream" / "STS"


def sick_dir(senteval_dir: Path) -> Path:
    """SICK's folder; the tokenized SentEval copy has none, so fall back to the raw ``senteval`` beside it."""
    own = senteval_dir / "downstream" / "SICK"
    if own.is_dir():
        return own
    sibling = senteval_dir.parent / "senteval" / "downstream" / "SICK"
    if sibling.is_dir():
        return sibling
    raise PcctuneError(f"missing folder: {own}")


def load_stsb(senteval_dir: Path, split: str) -> STSTask:
    path = _sts_dir(senteval_dir) / "STSBenchmark" / STSB_SPLITS[split]
    return STSTask("STSBenchmark", [STSSubset(split, read_stsb_csv(path), [path])])


def load_sick(senteval_dir: Path, split: str) -> STSTask:
    path = sick_dir(senteval_dir) / SICK_SPLITS[split]
    return STSTask("SICKRelatedness", [STSSubset(split, read_sick_txt(path), [path])])


def load_task(senteval_dir: Path, name: str) -> STSTask:
    """Load one of the seven evaluation tasks (test data)."""
    if name in STS_YEARS:
        return read_senteval_sts_year(_sts_dir(senteval_dir) / STS_YEARS[name], name)
    if name == "STSBenchmark":
        return load_stsb(senteval_dir, "test")
    if name == "SICKRelatedness":
        return load_sick(senteval_dir, "test")
    raise PcctuneError(f"unknown STS task {name!r}; choose from {', '.join(SEVEN_TASKS)}")


def load_test_tasks(senteval_dir: Path, names: tuple[str, ...] = SEVEN_TASKS) -> list[STSTask]:
    """The test side of every task: what training data must never contain."""
    return [load_task(senteval_dir, name) for name in names]
