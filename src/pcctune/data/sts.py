"""STS sentence pairs with gold scores, and the SentEval readers of the seven tasks' files.

Readers follow SentEval exactly where it matters for the published numbers:
- ``STS.input.*.txt`` lines are split on tabs and the first two fields taken (STS16 carries
  source fields after them); pairs whose ``STS.gs.*.txt`` line is empty are dropped.
- ``sts-*.csv`` (STS Benchmark) is split on tabs, first seven fields, never with a
  quote-honouring csv reader: its sentences contain unbalanced ``"`` characters.
- ``SICK_*.txt`` is tab-separated with a header; ``relatedness_score`` is the gold score (1–5).
"""

from __future__ import annotations

import math
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
        """Every subset's pairs, in the subsets' order (the concatenation SentEval's "all" scores)."""
        return [pair for subset in self.subsets for pair in subset.pairs]

    @property
    def files(self) -> list[Path]:
        """The files the task was read from."""
        return [path for subset in self.subsets for path in subset.files]


def parse_score(text: str, where: str) -> float:
    """A gold score as a finite float, or one clear error naming where it was read."""
    try:
        value = float(text)
    except ValueError:
        raise PcctuneError(f"{where}: score {text!r} is not a number") from None
    if not math.isfinite(value):
        raise PcctuneError(f"{where}: score {text!r} is not a finite number")
    return value


def read_text(path: Path) -> str:
    """A UTF-8 text file; a missing file or a byte that is not UTF-8 is one clear error naming the line."""
    if not path.is_file():
        raise PcctuneError(f"missing file: {path}")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise PcctuneError(
            f"{path}:{line}: not UTF-8 text (byte {data[error.start]:#04x}); re-save it as UTF-8"
        ) from None


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (see ``read_text``)."""
    return read_text(path).splitlines()


def read_senteval_sts_subset(folder: Path, subset: str) -> STSSubset:
    """Read ``STS.input.<subset>.txt`` + ``STS.gs.<subset>.txt``; drop pairs without a gold score."""
    input_path = folder / f"STS.input.{subset}.txt"
    gold_path = folder / f"STS.gs.{subset}.txt"
    inputs = read_lines(input_path)
    golds = read_lines(gold_path)
    if len(inputs) != len(golds):
        raise PcctuneError(f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}")
    pairs = []
    for number, (line, gold) in enumerate(zip(inputs, golds, strict=True), start=1):
        if not gold.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise PcctuneError(f"{input_path}:{number}: expected two tab-separated sentences")
        score = parse_score(gold.strip(), f"{gold_path}:{number}")
        pairs.append(STSPair(fields[0], fields[1], score))
    if not pairs:
        raise PcctuneError(f"{gold_path}: no gold scores (every line is empty)")
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
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise PcctuneError(f"{path}:{number}: expected 7 tab-separated fields, found {len(fields)}")
        score = parse_score(fields[4], f"{path}:{number}")
        pairs.append(STSPair(fields[5], fields[6], score))
    return pairs


SICK_COLUMNS = ("sentence_A", "sentence_B", "relatedness_score")


def read_sick_txt(path: Path) -> list[STSPair]:
    """Read a SICK ``SICK_*.txt`` file (tab-separated with header) as relatedness pairs."""
    lines = read_lines(path)
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
        pairs.append(STSPair(fields[a], fields[b], parse_score(fields[s], f"{path}:{number}")))
    return pairs
