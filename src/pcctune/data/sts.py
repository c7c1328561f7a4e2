"""STS sentence pairs with gold scores: SentEval folders, generic files, Hugging Face datasets.

Readers follow SentEval exactly where it matters for the published numbers:
- ``STS.input.*.txt`` lines are split on tabs and the first two fields taken (STS16 carries
  source fields after them); pairs whose ``STS.gs.*.txt`` line is empty are dropped.
- ``sts-*.csv`` (STS Benchmark) is split on tabs, first seven fields, never with a
  quote-honouring csv reader: its sentences contain unbalanced ``"`` characters.
- ``SICK_*.txt`` is tab-separated with a header; ``relatedness_score`` is the gold score (1–5).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pcctune.errors import PcctuneError


@dataclass(frozen=True)
class STSPair:
    """One sentence pair with its gold similarity score."""

    sentence1: str
    sentence2: str
    score: float


@dataclass
class STSSubset:
    """A named list of pairs read from one or two files (e.g. STS12 ``MSRpar``)."""

    name: str
    pairs: list[STSPair]
    files: list[Path] = field(default_factory=list)


@dataclass
class STSTask:
    """An evaluation task: one or more subsets (STS12–16 have several, STS-B and SICK-R one)."""

    name: str
    subsets: list[STSSubset]

    @property
    def pairs(self) -> list[STSPair]:
        return [pair for subset in self.subsets for pair in subset.pairs]

    @property
    def files(self) -> list[Path]:
        return [path for subset in self.subsets for path in subset.files]


def subsample_task(task: STSTask, count: int, seed: int = 0) -> STSTask:
    """``count`` pairs of ``task`` drawn uniformly without replacement (seeded), as one subset.

    One subset, because the headline number of a multi-subset task (STS12–16) is ρ on the
    concatenation of its subsets, and a small sample would leave some subsets too small for a
    correlation of their own. For quick comparisons on slow hardware only: Spearman on a
    subsample is a noisy estimate of the protocol's number (the same subsample for every model
    makes the comparison paired).
    """
    import numpy as np

    if count < 2:
        raise PcctuneError(f"a subsample needs at least 2 pairs, got {count}")
    pairs = task.pairs
    keep = sorted(np.random.default_rng(seed).permutation(len(pairs))[:count].tolist())
    return STSTask(task.name, [STSSubset(f"sample of {len(keep)}", [pairs[i] for i in keep], task.files)])


def _parse_score(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PcctuneError(f"{where}: score {text!r} is not a number") from None
    if math.isnan(value):
        raise PcctuneError(f"{where}: score is NaN")
    return value


def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise PcctuneError(f"missing file: {path}")
    return path.read_text(encoding="utf-8").splitlines()


def read_senteval_sts_subset(folder: Path, subset: str) -> STSSubset:
    """Read ``STS.input.<subset>.txt`` + ``STS.gs.<subset>.txt``; drop pairs without a gold score."""
    input_path = folder / f"STS.input.{subset}.txt"
    gold_path = folder / f"STS.gs.{subset}.txt"
    inputs = _read_lines(input_path)
    golds = _read_lines(gold_path)
    if len(inputs) != len(golds):
        raise PcctuneError(f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}")
    pairs = []
    for number, (line, gold) in enumerate(zip(inputs, golds), start=1):
        if not gold.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise PcctuneError(f"{input_path}:{number}: expected two tab-separated sentences")
        score = _parse_score(gold.strip(), f"{gold_path}:{number}")
        pairs.append(STSPair(fields[0], fields[1], score))
    return STSSubset(subset, pairs, [input_path, gold_path])


def senteval_subset_names(folder: Path) -> list[str]:
    """Subsets of an STS year folder: those with both an input and a gold file, sorted by name."""
    if not folder.is_dir():
        raise PcctuneError(f"missing folder: {folder}")
    names = [p.name[len("STS.input.") : -len(".txt")] for p in folder.glob("STS.input.*.txt")]
    names = [n for n in names if (folder / f"STS.gs.{n}.txt").is_file()]
    if not names:
        raise PcctuneError(f"no STS.input.*.txt with a matching STS.gs.*.txt in {folder}")
    return sorted(names)


def read_senteval_sts_year(folder: Path, name: str) -> STSTask:
    """Read every subset of an ``STS1x-en-test`` folder (STS13's ``SMT`` has no input and is skipped)."""
    return STSTask(name, [read_senteval_sts_subset(folder, s) for s in senteval_subset_names(folder)])


def read_stsb_csv(path: Path) -> list[STSPair]:
    """Read an STS Benchmark ``sts-*.csv``: tab-split, first seven fields (score is field 5)."""
    pairs = []
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise PcctuneError(f"{path}:{number}: expected 7 tab-separated fields, found {len(fields)}")
        score = _parse_score(fields[4], f"{path}:{number}")
        pairs.append(STSPair(fields[5], fields[6], score))
    return pairs


SICK_COLUMNS = ("sentence_A", "sentence_B", "relatedness_score")


def read_sick_txt(path: Path) -> list[STSPair]:
    """Read a SICK ``SICK_*.txt`` file (tab-separated with header) as relatedness pairs."""
    lines = _read_lines(path)
    if not lines:
        raise PcctuneError(f"{path} is empty")
    header = lines[0].split("\t")
    missing = [c for c in SICK_COLUMNS if c not in header]
    if missing:
        raise PcctuneError(f"{path}: missing column(s) {', '.join(missing)} in header")
    a, b, s = (header.index(c) for c in SICK_COLUMNS)
    pairs = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) <= max(a, b, s):
            raise PcctuneError(f"{path}:{number}: expected {len(header)} tab-separated fields")
        pairs.append(STSPair(fields[a], fields[b], _parse_score(fields[s], f"{path}:{number}")))
    return pairs


# --- generic files and Hugging Face datasets -------------------------------------------------

SENTENCE1_KEYS = ("sentence1", "sentence_A", "sent1", "text1")
SENTENCE2_KEYS = ("sentence2", "sentence_B", "sent2", "text2")
SCORE_KEYS = ("score", "label", "similarity", "relatedness_score")


def _pick(columns: Sequence[str], options: Sequence[str], source: str) -> str:
    for option in options:
        if option in columns:
            return option
    raise PcctuneError(f"{source}: no column among {', '.join(options)} (found: {', '.join(columns)})")


def pairs_from_records(records: Iterable[dict], columns: Sequence[str], source: str) -> list[STSPair]:
    """Turn dict rows with sentence1/sentence2/score (or the usual aliases) into pairs."""
    k1 = _pick(columns, SENTENCE1_KEYS, source)
    k2 = _pick(columns, SENTENCE2_KEYS, source)
    ks = _pick(columns, SCORE_KEYS, source)
    pairs = []
    for number, row in enumerate(records, start=1):
        score = _parse_score(str(row[ks]), f"{source} row {number}")
        pairs.append(STSPair(str(row[k1]), str(row[k2]), score))
    return pairs


def read_pairs_file(path: str | Path) -> list[STSPair]:
    """Read a user's ``.csv`` (quoted), ``.tsv`` (plain tabs) or ``.jsonl`` file of scored pairs."""
    path = Path(path)
    if not path.is_file():
        raise PcctuneError(f"missing file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(_read_lines(path), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise PcctuneError(f"{path}:{number}: invalid JSON ({error.msg})") from None
        columns = list(rows[0]) if rows else []
        return pairs_from_records(rows, columns, str(path))
    if suffix in (".csv", ".tsv"):
        with path.open(encoding="utf-8", newline="") as handle:
            if suffix == ".csv":
                reader = csv.DictReader(handle)
            else:
                reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            rows = list(reader)
            return pairs_from_records(rows, reader.fieldnames or [], str(path))
    raise PcctuneError(f"{path}: unsupported pair file type {suffix!r} (use .csv, .tsv or .jsonl)")


# MTEB's copies of the seven STS sets on the Hugging Face Hub (dataset id, revision).
# Note MTEB's protocol differs from SentEval's (e.g. SICK-R uses all 9,927 pairs).
MTEB_STS_DATASETS: dict[str, tuple[str, str]] = {
    "STS12": ("mteb/sts12-sts", "a0d554a64d88156834ff5ae9920b964011b16384"),
    "STS13": ("mteb/sts13-sts", "7e90230a92c190f1bf69ae9002b8cea547a64cca"),
    "STS14": ("mteb/sts14-sts", "6031580fec1f6af667f0bd2da0a551cf4f0b2375"),
    "STS15": ("mteb/sts15-sts", "ae752c7c21bf194d8b67fd573edf7ae58183cbe3"),
    "STS16": ("mteb/sts16-sts", "4d8694f8f0e0100860b497b999b3dbed754a0513"),
    "STSBenchmark": ("mteb/stsbenchmark-sts", "b0fddb56ed78048fa8b90373c8a3cfc37b684831"),
    "SICKRelatedness": ("mteb/sickr-sts", "20a6d6f312dd54037fe07a32d58e5e168867909d"),
}


def pairs_from_hf_dataset(dataset, source: str = "dataset") -> list[STSPair]:
    """Pairs from a ``datasets.Dataset`` with sentence1/sentence2/score columns."""
    return pairs_from_records(iter(dataset), list(dataset.column_names), source)


def load_hf_pairs(dataset_id: str, split: str = "test", revision: str | None = None) -> list[STSPair]:
    """Load scored pairs from the Hugging Face Hub (an MTEB task name or any dataset id)."""
    import datasets

    if dataset_id in MTEB_STS_DATASETS:
        dataset_id, default_revision = MTEB_STS_DATASETS[dataset_id]
        revision = revision or default_revision
    try:
        dataset = datasets.load_dataset(dataset_id, split=split, revision=revision)
    except Exception as error:  # network, auth, missing split: one clear line for the user
        raise PcctuneError(f"could not load {dataset_id} ({split}) from the Hub: {error}") from None
    return pairs_from_hf_dataset(dataset, f"{dataset_id}:{split}")
