"""A user's own scored pairs: ``.csv``, ``.tsv`` or ``.jsonl`` files, ``datasets`` objects and Hub datasets.

Columns are found by name: ``sentence1``, ``sentence2`` and ``score`` (or the usual aliases, such as SICK's
``sentence_A`` and ``relatedness_score``), or the names a caller gives for each (``columns``). Scores may be on any
scale. Readers never guess. ``.tsv`` is split on tabs only (quotes are text). ``.csv`` is parsed with
quoting, and a row that does not parse to exactly the header's columns (a stray quote merges
rows; a missing comma splits them) is an error naming its line. A jsonl row must be an object
holding the chosen keys. Scores must be finite numbers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcctune.correlation import MIN_PAIRS
from pcctune.data.hub import load_hub_dataset
from pcctune.data.local import PAIR_FILE_SUFFIXES as PAIR_FILE_SUFFIXES  # where pair files are told apart
from pcctune.data.local import local_path
from pcctune.data.sts import STSPair, STSSubset, STSTask, parse_score, read_lines, read_text
from pcctune.errors import PcctuneError, some_of

SENTENCE1_KEYS = ("sentence1", "sentence_A", "sent1", "text1")
SENTENCE2_KEYS = ("sentence2", "sentence_B", "sent2", "text2")
SCORE_KEYS = ("score", "label", "similarity", "relatedness_score")
COLUMN_KEYS: dict[str, tuple[str, ...]] = {
    "sentence1": SENTENCE1_KEYS,
    "sentence2": SENTENCE2_KEYS,
    "score": SCORE_KEYS,
}
"""pcctune's three columns → the names each is found under when the caller names none."""
EMPTY_ROWS_SHOWN = 10
logger = logging.getLogger(__name__)
Columns = Mapping[str, str]
"""pcctune's column (``sentence1``, ``sentence2``, ``score``) → the name it has in a file or dataset."""


def _pick(columns: Sequence[str], options: Sequence[str], source: str, map_with: str | None = None) -> str:
    for option in options:
        if option in columns:
            return option
    found = f"{source}: no column among {', '.join(options)} (found: {', '.join(columns)})"
    raise PcctuneError(found + mapping_hint(columns, map_with))


COLUMN_FLAGS = "--sentence1-column"
"""``map_with`` for the command line: its hint names the three ``--…-column`` options of ``pcctune eval``."""


def mapping_hint(columns: Sequence[str], map_with: str | None) -> str:
    """How to name a file's columns where none has a usual name: ``; map them with data.columns: {sentence1:
    sentence_1, …}`` (``map_with``: the setting that maps them), or ``; name them with --sentence1-column sentence_1
    …`` (``COLUMN_FLAGS``), the file's columns in order where it has three."""
    if map_with is None:
        return ""
    shown = list(columns) if len(columns) == len(COLUMN_KEYS) else ["COLUMN"] * len(COLUMN_KEYS)
    named = list(zip(COLUMN_KEYS, shown, strict=True))
    if map_with == COLUMN_FLAGS:
        return "; name them with " + " ".join(f"--{role}-column {name}" for role, name in named)
    return f"; map them with {map_with}: {{{', '.join(f'{role}: {name}' for role, name in named)}}}"


def _column(columns: Sequence[str], role: str, names: Columns | None, source: str, map_with: str | None = None) -> str:
    """The column holding ``role``: the one ``names`` gives (which must exist), else the first of its usual names."""
    name = (names or {}).get(role)
    if name is None:
        return _pick(columns, COLUMN_KEYS[role], source, map_with)
    if name not in columns:
        raise PcctuneError(f"{source}: no column {name!r} for {role} (found: {', '.join(columns)})")
    return name


def check_columns(names: Columns | None) -> None:
    """Refuse a column mapping with a key other than sentence1, sentence2 and score."""
    unknown = [key for key in names or {} if key not in COLUMN_KEYS]
    if unknown:
        raise PcctuneError(f"unknown column role {unknown[0]!r}; name the columns of {', '.join(COLUMN_KEYS)}")


def pairs_from_records(
    records: Iterable[dict[str, Any]],
    columns: Sequence[str],
    source: str,
    names: Columns | None = None,
    map_with: str | None = None,
) -> list[STSPair]:
    """Turn dict rows into pairs: the columns ``names`` gives (pcctune's column → the rows' key), else
    sentence1/sentence2/score or their usual aliases (an error then names the setting ``map_with`` that maps them)."""
    check_columns(names)
    keys = tuple(_column(columns, role, names, source, map_with) for role in COLUMN_KEYS)
    pairs = []
    for number, row in enumerate(records, start=1):
        missing = [key for key in keys if row.get(key) is None]
        if missing:
            raise PcctuneError(f"{source} row {number}: missing {', '.join(missing)}")
        score = parse_score(str(row[keys[2]]), f"{source} row {number}")
        pairs.append(STSPair(str(row[keys[0]]), str(row[keys[1]]), score))
    warn_empty_sentences(pairs, source)
    return pairs


def warn_empty_sentences(pairs: Sequence[STSPair], source: str) -> None:
    """One warning naming the rows (numbered from 1, as the errors of ``pairs_from_records``) whose first or second
    sentence is empty or only whitespace: read as given, and every such pair embeds its template alone."""
    rows = [n for n, pair in enumerate(pairs, start=1) if not pair.sentence1.strip() or not pair.sentence2.strip()]
    if rows:
        noun = "row" if len(rows) == 1 else "rows"
        shown = some_of(rows, EMPTY_ROWS_SHOWN)
        logger.warning("%s: an empty sentence in %s %s (of %d pairs)", source, noun, shown, len(pairs))


def pairs_from_hf_dataset(
    dataset: Any, source: str = "dataset", names: Columns | None = None, map_with: str | None = None
) -> list[STSPair]:
    """Pairs from a ``datasets.Dataset`` with sentence1/sentence2/score columns (or those ``names`` gives;
    ``map_with``: the setting that names them, for the error)."""
    return pairs_from_records(iter(dataset), list(dataset.column_names), source, names, map_with)


def _jsonl_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise PcctuneError(f"{path}:{number}: invalid JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise PcctuneError(f"{path}:{number}: expected a JSON object, found {type(row).__name__}")
        rows.append(row)
    return rows


def read_table(path: Path, delimiter: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows (as dicts keyed by the header) of a csv (``,``, quoted) or tsv (``\t``, split on tabs) file.

    A row whose field count differs from the header's is an error naming its line.
    """
    text = read_text(path)  # decodes (one clear error for non-UTF-8) before csv sees the text
    if delimiter == ",":
        check_not_tab_separated(path, text)
    if delimiter == "\t":
        lines = text.splitlines()
        table = [line.split("\t") for line in lines]
        numbers = list(range(1, len(lines) + 1))
    else:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        table, numbers = [], []
        try:
            for row in reader:
                if any("\n" in cell for cell in row):
                    start = reader.line_num - sum(cell.count("\n") for cell in row)
                    raise PcctuneError(f"{path}:{start}: a field runs over several lines (an unbalanced quote?)")
                table.append(row)
                numbers.append(reader.line_num)
        except csv.Error as error:
            raise PcctuneError(
                f"{path}:{reader.line_num}: unreadable csv ({error}; an unbalanced quote or an oversized field?)"
            ) from None
    kept = [(n, row) for n, row in zip(numbers, table, strict=True) if any(cell.strip() for cell in row)]
    if not kept:
        return [], []
    (_, header), body = kept[0], kept[1:]
    for number, row in body:
        if len(row) != len(header):
            raise PcctuneError(
                f"{path}:{number}: {len(row)} fields where the header has {len(header)} "
                "(an unbalanced quote or a stray separator?)"
            )
    return [dict(zip(header, row, strict=True)) for _, row in body], header


def check_not_tab_separated(path: Path, text: str) -> None:
    """Refuse a ``.csv`` whose header is split by tabs and not by commas, naming the ``.tsv`` it should be."""
    header = next((line for line in text.splitlines() if line.strip()), "")
    if "\t" in header and "," not in header:
        raise PcctuneError(f"{path}: its columns are separated by tabs, not commas: name it {path.stem}.tsv")


def read_pairs_file(path: str | Path, names: Columns | None = None, map_with: str | None = None) -> list[STSPair]:
    """Read a user's ``.csv`` (quoted), ``.tsv`` (plain tabs) or ``.jsonl`` file of scored pairs (its columns:
    those ``names`` gives, else sentence1/sentence2/score or their usual aliases; ``map_with``: the setting that
    names them, for the error)."""
    path = Path(path)
    if path.is_dir():
        raise PcctuneError(f"{path} is a folder; give a .csv, .tsv or .jsonl file of pairs")
    if not path.is_file():
        raise PcctuneError(f"missing file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = _jsonl_rows(path)
        columns: list[str] = list(rows[0]) if rows else []
    elif suffix in (".csv", ".tsv"):
        rows, columns = read_table(path, "," if suffix == ".csv" else "\t")
    else:
        raise PcctuneError(f"{path}: unsupported pair file type {suffix!r} (use .csv, .tsv or .jsonl)")
    if not rows:
        raise PcctuneError(f"{path}: no pairs in it")
    return pairs_from_records(rows, columns, str(path), names, map_with)


@dataclass
class PairSet:
    """A user's scored pairs as one named test set, and what they were read from."""

    name: str
    pairs: list[STSPair]
    files: list[Path] = field(default_factory=list)
    content_sha256: str | None = None
    """A dataset's own hash of its pairs (a file is hashed as a file: ``pcctune.provenance.file_hashes``)."""

    def task(self) -> STSTask:
        """The set as an STS task of one subset, scored as the built-in STS-B and SICK-R are."""
        return STSTask(self.name, [STSSubset(self.name, self.pairs, self.files)])


def pairs_sha256(pairs: Sequence[STSPair], scores: bool = True) -> str:
    """The sha256 of the pairs' content: their sentences and (with ``scores``) gold scores, in order, written as
    JSON, so a tab or a line break inside a sentence cannot make two sets of pairs read alike. The one hash of pairs
    that every key holding pairs uses (a test set's, the base scores', the leakage checks')."""
    rows = [[p.sentence1, p.sentence2, p.score] if scores else [p.sentence1, p.sentence2] for p in pairs]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def check_scoreable(pairs: Sequence[STSPair], source: str) -> None:
    """Refuse a test set no correlation can be computed on: no pairs, fewer than ``MIN_PAIRS``, or one score for
    every pair."""
    if not pairs:
        raise PcctuneError(f"{source}: no pairs in it")
    if len(pairs) < MIN_PAIRS:
        raise PcctuneError(f"{source}: {len(pairs)} pair(s); a test set needs at least {MIN_PAIRS}")
    if len({pair.score for pair in pairs}) < 2:
        raise PcctuneError(
            f"{source}: every pair has the score {pairs[0].score:g}; a correlation needs different scores"
        )


PAIR_SPLIT = "test"
"""The split of a Hub dataset read as a test set where none is named."""


def check_dataset(source: Any) -> None:
    """Refuse, in one line, a test set given as something other than a file, a Hub id or a ``datasets.Dataset``."""
    import datasets

    if isinstance(source, datasets.DatasetDict):
        raise PcctuneError(f"a DatasetDict holds splits ({', '.join(source)}); give one, e.g. dataset['test']")
    if not isinstance(source, datasets.Dataset):
        raise PcctuneError(
            f"a test set is a pair file, a Hub dataset id or a datasets.Dataset, not a {type(source).__name__} "
            "(a pandas DataFrame: datasets.Dataset.from_pandas(frame))"
        )


SPLIT_NAMES = ("train", "dev", "validation", "test")
"""File names that say which split a file holds, not what the set is (the Hub's layout: ``my_set/test.csv``)."""


def pair_file_name(path: Path) -> str:
    """A pair file's name as a test set: its stem, or its folder's name where the stem only names a split
    (``my_set/test.csv`` is ``my_set``)."""
    if path.stem.lower() in SPLIT_NAMES:
        return path.resolve().parent.name or path.stem
    return path.stem


def load_pair_set(
    source: str | Path | Any, names: Columns | None = None, split: str = PAIR_SPLIT, map_with: str | None = None
) -> PairSet:
    """A test set of scored pairs from ``source``: a ``.csv`` / ``.tsv`` / ``.jsonl`` file (named by its stem, or by
    its folder where the stem names a split: ``pair_file_name``), a ``datasets.Dataset``, a folder in the Hub's file
    layout or a Hub dataset id (its ``split``, through ``datasets.load_dataset``); ``names``: the columns' names (see
    ``Columns``; ``map_with``: the setting that gives them, which a missing column's error names). One clear error
    for a missing column, a score that is not a number, or a set that no correlation can be computed on."""
    if not isinstance(source, str | Path):  # a datasets.Dataset
        check_dataset(source)
        name = str(getattr(getattr(source, "info", None), "dataset_name", None) or "dataset")
        pairs = pairs_from_hf_dataset(source, name, names, map_with)
        pair_set = PairSet(name, pairs, content_sha256=pairs_sha256(pairs))
    elif (path := local_path(source)) is not None and path.is_file():
        pair_set = PairSet(pair_file_name(path), read_pairs_file(path, names, map_with), [path])
    else:  # a Hub dataset id, or a folder in the Hub's layout
        dataset = load_hub_dataset(str(source), split=split)
        pairs = pairs_from_hf_dataset(dataset, f"Hub dataset {source}", names, map_with)
        pair_set = PairSet(str(source), pairs, content_sha256=pairs_sha256(pairs))
    check_scoreable(pair_set.pairs, str(source) if isinstance(source, str | Path) else pair_set.name)
    return pair_set
