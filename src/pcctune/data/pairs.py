"""A user's own scored pairs: ``.csv``, ``.tsv`` or ``.jsonl`` files, and ``datasets`` objects.

Readers never guess. ``.tsv`` is split on tabs only (quotes are text). ``.csv`` is parsed with
quoting, and a row that does not parse to exactly the header's columns (a stray quote merges
rows; a missing comma splits them) is an error naming its line. A jsonl row must be an object
holding the chosen keys. Scores must be finite numbers.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pcctune.data.sts import STSPair, parse_score, read_lines, read_text
from pcctune.errors import PcctuneError

SENTENCE1_KEYS = ("sentence1", "sentence_A", "sent1", "text1")
SENTENCE2_KEYS = ("sentence2", "sentence_B", "sent2", "text2")
SCORE_KEYS = ("score", "label", "similarity", "relatedness_score")


def _pick(columns: Sequence[str], options: Sequence[str], source: str) -> str:
    for option in options:
        if option in columns:
            return option
    raise PcctuneError(f"{source}: no column among {', '.join(options)} (found: {', '.join(columns)})")


def pairs_from_records(records: Iterable[dict[str, Any]], columns: Sequence[str], source: str) -> list[STSPair]:
    """Turn dict rows with sentence1/sentence2/score (or the usual aliases) into pairs."""
    keys = (
        _pick(columns, SENTENCE1_KEYS, source),
        _pick(columns, SENTENCE2_KEYS, source),
        _pick(columns, SCORE_KEYS, source),
    )
    pairs = []
    for number, row in enumerate(records, start=1):
        missing = [key for key in keys if row.get(key) is None]
        if missing:
            raise PcctuneError(f"{source} row {number}: missing {', '.join(missing)}")
        score = parse_score(str(row[keys[2]]), f"{source} row {number}")
        pairs.append(STSPair(str(row[keys[0]]), str(row[keys[1]]), score))
    return pairs


def pairs_from_hf_dataset(dataset: Any, source: str = "dataset") -> list[STSPair]:
    """Pairs from a ``datasets.Dataset`` with sentence1/sentence2/score columns."""
    return pairs_from_records(iter(dataset), list(dataset.column_names), source)


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


def read_pairs_file(path: str | Path) -> list[STSPair]:
    """Read a user's ``.csv`` (quoted), ``.tsv`` (plain tabs) or ``.jsonl`` file of scored pairs."""
    path = Path(path)
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
    return pairs_from_records(rows, columns, str(path))
