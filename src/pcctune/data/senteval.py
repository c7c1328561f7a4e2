"""Where each dataset lives inside a SentEval ``data`` folder, and the split readers of STS-B and SICK.

STS12–16 test sets (``downstream/STS/STS1x-en-test``), STS Benchmark (``sts-{train,dev,test}.csv``),
SICK (``SICK_train.txt``, ``SICK_trial.txt``, ``SICK_test_annotated.txt``) and SNLI
(``s1/s2/labels.<split>``).
"""

from __future__ import annotations

from pathlib import Path

from pcctune.data.sts import STSSubset, STSTask, read_sick_txt, read_stsb_csv
from pcctune.errors import PcctuneError
from pcctune.paths import DOWNSTREAM

STSB_SPLITS = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
SICK_SPLITS = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


STS_YEARS = range(12, 17)
"""The SemEval STS test years, STS12 to STS16."""


def downstream_dir(senteval_dir: Path) -> Path:
    """The folder of the tasks' folders."""
    return senteval_dir / DOWNSTREAM


def sts_dir(senteval_dir: Path) -> Path:
    """The folder of the STS tasks' folders (each year's, STS-B's)."""
    return downstream_dir(senteval_dir) / "STS"


def sts_year_dir(senteval_dir: Path, year: int) -> Path:
    """The folder of one year's STS test files (``STS12-en-test``)."""
    return sts_dir(senteval_dir) / f"STS{year}-en-test"


def snli_dir(senteval_dir: Path) -> Path:
    """SNLI's ``s1/s2/labels`` folder (stage-1 triplets, the regression paper's NLI pairs)."""
    return downstream_dir(senteval_dir) / "SNLI"


def own_sick_dir(senteval_dir: Path) -> Path:
    """The SICK folder of ``senteval_dir`` itself, whether or not it exists."""
    return downstream_dir(senteval_dir) / "SICK"


def sick_dir(senteval_dir: Path) -> Path:
    """SICK's folder; the tokenized SentEval copy has none, so fall back to the raw ``senteval`` beside it."""
    own = own_sick_dir(senteval_dir)
    if own.is_dir():
        return own
    sibling = own_sick_dir(senteval_dir.parent / "senteval")
    if sibling.is_dir():
        return sibling
    raise PcctuneError(f"missing folder: {own}")


def borrowed_sick(senteval_dir: Path) -> list[Path]:
    """SICK's folder where it lies outside ``senteval_dir`` (the tokenized copy reads the raw one beside it): a
    file state taken of ``senteval_dir`` alone would miss it."""
    try:
        found = sick_dir(senteval_dir)
    except PcctuneError:
        return []
    return [] if found.resolve().is_relative_to(senteval_dir.resolve()) else [found]


TOKENIZED = "senteval-tokenized"


def tokenized_dir(senteval_dir: Path) -> Path:
    """The Moses-tokenized, lowercased copy of the STS text that SentEval's download script leaves.

    ``senteval_dir`` may be that copy itself, or the raw ``senteval`` folder with the copy beside it.
    """
    if senteval_dir.name == TOKENIZED:
        return senteval_dir
    sibling = senteval_dir.parent / TOKENIZED
    if sts_dir(sibling).is_dir():
        return sibling
    raise PcctuneError(
        f"no {TOKENIZED}/ beside {senteval_dir}: the paper protocol reads the Moses-tokenized STS text "
        f"(SentEval's download script); pass --data pointing at a folder holding both senteval/ and {TOKENIZED}/"
    )


def load_stsb(senteval_dir: Path, split: str) -> STSTask:
    """One split of STS-B (``train``, ``dev`` or ``test``), gold scores 0–5."""
    path = sts_dir(senteval_dir) / "STSBenchmark" / STSB_SPLITS[split]
    return STSTask("STSBenchmark", [STSSubset(split, read_stsb_csv(path), [path])])


def load_sick(senteval_dir: Path, split: str) -> STSTask:
    """One split of SICK-R (``train``, ``dev``: its trial set, or ``test``), gold relatedness 1–5."""
    path = sick_dir(senteval_dir) / SICK_SPLITS[split]
    return STSTask("SICKRelatedness", [STSSubset(split, read_sick_txt(path), [path])])
