"""Every reader, fuzzed: random bytes and mutated valid files give a parse or one clean
``PcctuneError``, never another exception. A few hundred examples per reader here; ``make test-slow``
runs a few thousand (``PCCTUNE_FUZZ_EXAMPLES``)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcctune.data.nli import read_simcse_csv
from pcctune.data.pairs import read_pairs_file
from pcctune.data.sts import read_senteval_sts_subset, read_sick_txt, read_stsb_csv
from pcctune.errors import PcctuneError
from pcctune.results import load_result
from pcctune.training.config import load_config

DEFAULT_EXAMPLES = 200
SLOW_EXAMPLES = int(os.environ.get("PCCTUNE_FUZZ_EXAMPLES", "3000"))


def _sts_subset(folder: Path, data: bytes) -> Any:
    (folder / "STS.input.x.txt").write_bytes(data)
    (folder / "STS.gs.x.txt").write_bytes(b"4.0\n3.2\n\n1.0\n")
    return read_senteval_sts_subset(folder, "x")


def _on_file(suffix: str, reader: Callable[[Path], Any]) -> Callable[[Path, bytes], Any]:
    def read(folder: Path, data: bytes) -> Any:
        path = folder / f"input{suffix}"
        path.write_bytes(data)
        return reader(path)

    return read


VALID_PAIRS = [{"sentence1": "A man plays.", "sentence2": "A man plays guitar.", "score": 3.5}] * 3
VALID_RESULT = {
    "kind": "eval",
    "schema_version": 2,
    "protocol": "simcse-senteval",
    "model": "m",
    "data_dir": "d",
    "sts": {"STS12": 70.0, "avg": 70.0},
}
READERS: dict[str, tuple[Callable[[Path, bytes], Any], bytes]] = {
    "sts-subset": (_sts_subset, b"A man plays.\tA man sings.\nA dog.\tA cat.\textra\n\nx\ty\n"),
    "stsb-csv": (
        _on_file(".csv", read_stsb_csv),
        b"main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane is taking off.\n",
    ),
    "sick-txt": (
        _on_file(".txt", read_sick_txt),
        b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n1\tA b.\tC d.\t4.5\tNEUTRAL\n",
    ),
    "pairs-jsonl": (_on_file(".jsonl", read_pairs_file), "\n".join(map(json.dumps, VALID_PAIRS)).encode()),
    "pairs-csv": (_on_file(".csv", read_pairs_file), b'sentence1,sentence2,score\nA man.,A dog.,3.5\n"q,",b,1\n'),
    "pairs-tsv": (_on_file(".tsv", read_pairs_file), b"sentence1\tsentence2\tscore\nA man.\tA dog.\t3.5\n"),
    "simcse-csv": (_on_file(".csv", read_simcse_csv), b"sent0,sent1,hard_neg\nA man.,A person.,A dog.\n"),
    "config": (
        _on_file(".yaml", load_config),
        yaml.safe_dump(
            {"model": "m", "stages": [{"name": "s", "loss": "pearson", "data": {"source": "stage2"}}]}
        ).encode(),
    ),
    "result-json": (_on_file(".json", load_result), json.dumps(VALID_RESULT).encode()),
}


@st.composite
def mutated(draw: st.DrawFn, valid: bytes) -> bytes:
    """``valid`` with a few bytes replaced, inserted or deleted (or cut short)."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 6))):
        where = draw(st.integers(0, max(len(data) - 1, 0)))
        action = draw(st.sampled_from(["replace", "insert", "delete", "truncate"]))
        byte = draw(st.integers(0, 255))
        if action == "replace" and data:
            data[where] = byte
        elif action == "insert":
            data.insert(where, byte)
        elif action == "delete" and data:
            del data[where]
        elif action == "truncate":
            del data[where:]
    return bytes(data)


def fuzz(name: str, examples: int) -> None:
    read, valid = READERS[name]
    inputs = st.one_of(st.binary(max_size=600), mutated(valid))

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(inputs)
    def check(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as folder:
            try:
                read(Path(folder), data)
            except PcctuneError:
                pass

    check()


def _pairs(parsed: Any) -> list[tuple[str, str, float]]:
    return [(pair.sentence1, pair.sentence2, pair.score) for pair in parsed]


EXPECTED: dict[str, Callable[[Any], Any]] = {
    "sts-subset": lambda subset: (
        _pairs(subset.pairs) == [("A man plays.", "A man sings.", 4.0), ("A dog.", "A cat.", 3.2), ("x", "y", 1.0)]
    ),
    "stsb-csv": lambda pairs: _pairs(pairs) == [("A plane is taking off.", "An air plane is taking off.", 5.0)],
    "sick-txt": lambda pairs: _pairs(pairs) == [("A b.", "C d.", 4.5)],
    "pairs-jsonl": lambda pairs: _pairs(pairs) == [("A man plays.", "A man plays guitar.", 3.5)] * 3,
    "pairs-csv": lambda pairs: _pairs(pairs) == [("A man.", "A dog.", 3.5), ("q,", "b", 1.0)],
    "pairs-tsv": lambda pairs: _pairs(pairs) == [("A man.", "A dog.", 3.5)],
    "simcse-csv": lambda triplets: (
        [(t.anchor, t.positive, t.negative) for t in triplets] == [("A man.", "A person.", "A dog.")]
    ),
    "config": lambda config: config.model == "m" and [(s.name, s.loss) for s in config.stages] == [("s", "pearson")],
    "result-json": lambda result: result.model == "m" and result.sts == {"STS12": 70.0, "avg": 70.0},
}
"""What each reader must make of its valid example: the baseline the fuzzing mutates."""


def test_every_reader_reads_its_valid_example(tmp_path):
    assert EXPECTED.keys() == READERS.keys()
    for name, (read, valid) in READERS.items():
        folder = tmp_path / name
        folder.mkdir()
        assert EXPECTED[name](read(folder, valid)), name


@pytest.mark.parametrize("name", READERS)
def test_reader_gives_a_parse_or_one_clean_error(name):
    fuzz(name, DEFAULT_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", READERS)
def test_reader_gives_a_parse_or_one_clean_error_thoroughly(name):
    fuzz(name, SLOW_EXAMPLES)
