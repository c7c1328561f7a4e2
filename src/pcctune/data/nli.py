"""NLI triplets (anchor, positive, hard negative) for stage-1 contrastive training.

Sources: SimCSE's ``nli_for_simcse.csv`` (columns ``sent0, sent1, hard_neg``), SNLI-format
folders (``s1.<split>``, ``s2.<split>``, ``labels.<split>``) turned into
(premise, entailment, contradiction), and Hugging Face ``all-nli`` triplet datasets
(``anchor, positive, negative``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcctune.data.pairs import read_table
from pcctune.data.sts import STSPair, read_lines
from pcctune.errors import PcctuneError


@dataclass(frozen=True)
class Triplet:
    """An anchor, its positive, and an optional hard negative."""

    anchor: str
    positive: str
    negative: str | None = None


def read_simcse_csv(path: str | Path) -> list[Triplet]:
    """Read SimCSE's csv: ``sent0, sent1[, hard_neg]`` (pairs without negatives are allowed)."""
    path = Path(path)
    if not path.is_file():
        raise PcctuneError(f"missing file: {path}")
    rows, columns = read_table(path, ",")
    missing = [c for c in ("sent0", "sent1") if c not in columns]
    if missing:
        raise PcctuneError(f"{path}: missing column(s) {', '.join(missing)} (found: {', '.join(columns)})")
    has_negative = "hard_neg" in columns
    return [Triplet(r["sent0"], r["sent1"], r["hard_neg"] if has_negative else None) for r in rows]


SNLI_SPLITS = ("dev", "test")
"""The SNLI splits read where none are named (about 20,000 pairs): stage-1 triplets from the folder, DPO's
candidates, the regression head's warm-up; the 550,000 of ``train`` only when asked (``data.splits``)."""


def split_names(splits: str | Sequence[str]) -> tuple[str, ...]:
    """The SNLI splits a reader reads: a list of names, or one name as a string (``"dev"``, not its letters)."""
    return (splits,) if isinstance(splits, str) else tuple(splits)


def snli_files(folder: Path, splits: Sequence[str]) -> list[Path]:
    """Each SNLI split's three files in turn: ``s1.<split>`` (premises), ``s2.<split>`` (hypotheses),
    ``labels.<split>``."""
    return [folder / f"{kind}.{split}" for split in splits for kind in ("s1", "s2", "labels")]


def read_snli_split(folder: Path, split: str) -> list[tuple[str, str, str]]:
    """(premise, hypothesis, label) rows of an SNLI split (``snli_files``)."""
    premises, hypotheses, labels = (read_lines(path) for path in snli_files(folder, [split]))
    if not len(premises) == len(hypotheses) == len(labels):
        raise PcctuneError(f"{folder}: s1/s2/labels of split {split!r} differ in length")
    return [
        (premise, hypothesis, label.strip())
        for premise, hypothesis, label in zip(premises, hypotheses, labels, strict=True)
    ]


def read_snli_folder(folder: str | Path, splits: str | Sequence[str] = SNLI_SPLITS) -> list[Triplet]:
    """Build (premise, entailment, contradiction) triplets from SNLI s1/s2/labels files.

    For each premise, its entailment and contradiction hypotheses are paired in file order;
    a premise lacking either label gives no triplet.
    """
    folder = Path(folder)
    triplets: list[Triplet] = []
    for split in split_names(splits):
        by_premise: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for premise, hypothesis, label in read_snli_split(folder, split):
            by_premise[premise][label].append(hypothesis)
        for premise, groups in by_premise.items():
            for positive, negative in zip(groups["entailment"], groups["contradiction"], strict=False):
                triplets.append(Triplet(premise, positive, negative))
    return triplets


def triplets_from_hf_dataset(dataset: Any) -> list[Triplet]:
    """Triplets from a ``datasets.Dataset`` in the all-nli format (``anchor, positive[, negative]``)."""
    columns = list(dataset.column_names)
    missing = [c for c in ("anchor", "positive") if c not in columns]
    if missing:
        raise PcctuneError(f"dataset lacks column(s) {', '.join(missing)} (found: {', '.join(columns)})")
    has_negative = "negative" in columns
    return [Triplet(r["anchor"], r["positive"], r["negative"] if has_negative else None) for r in dataset]


NLI_REGRESSION_LABELS = {"contradiction": 0.0, "neutral": 1.0, "entailment": 2.0}


def read_snli_regression_pairs(folder: str | Path, splits: str | Sequence[str] = SNLI_SPLITS) -> list[STSPair]:
    """SNLI (premise, hypothesis) pairs as floats: contradiction 0, neutral 1, entailment 2.

    The regression framework (§4.1) treats the three NLI labels as ordered similarity levels;
    pairs without a gold label (``-``) are skipped.
    """
    folder = Path(folder)
    pairs = []
    for split in split_names(splits):
        for premise, hypothesis, label in read_snli_split(folder, split):
            if label in NLI_REGRESSION_LABELS:
                pairs.append(STSPair(premise, hypothesis, NLI_REGRESSION_LABELS[label]))
    return pairs
