"""NLI triplets from SimCSE csv, SNLI folders and all-nli style datasets."""

from __future__ import annotations

import pytest

from pcctune.data.nli import (
    Triplet,
    read_simcse_csv,
    read_snli_folder,
    read_snli_regression_pairs,
    triplets_from_hf_dataset,
)
from pcctune.errors import PcctuneError
from pcctune.testing import write_lines


def test_simcse_csv_with_and_without_negatives(tmp_path):
    (tmp_path / "a.csv").write_text('sent0,sent1,hard_neg\nA man,"A person, outside",Nobody\n', encoding="utf-8")
    (tmp_path / "b.csv").write_text("sent0,sent1\nA man,A person\n", encoding="utf-8")
    assert read_simcse_csv(tmp_path / "a.csv") == [Triplet("A man", "A person, outside", "Nobody")]
    assert read_simcse_csv(tmp_path / "b.csv") == [Triplet("A man", "A person", None)]


def test_simcse_csv_missing_columns(tmp_path):
    (tmp_path / "a.csv").write_text("premise,hypothesis\nA,B\n", encoding="utf-8")
    with pytest.raises(PcctuneError, match="missing column"):
        read_simcse_csv(tmp_path / "a.csv")


def test_snli_folder_pairs_entailment_with_contradiction(tmp_path):
    write_lines(tmp_path / "s1.dev", ["P1", "P1", "P1", "P2", "P2", "P3"])
    write_lines(tmp_path / "s2.dev", ["e1", "n1", "c1", "e2", "n2", "e3"])
    write_lines(
        tmp_path / "labels.dev", ["entailment", "neutral", "contradiction", "entailment", "neutral", "entailment"]
    )
    triplets = read_snli_folder(tmp_path, splits=("dev",))
    assert triplets == [Triplet("P1", "e1", "c1")]  # P2 and P3 have no contradiction
    assert read_snli_folder(tmp_path, splits="dev") == triplets  # one split by name, not its letters
    assert read_snli_regression_pairs(tmp_path, "dev") == read_snli_regression_pairs(tmp_path, ["dev"])


def test_hf_all_nli_format():
    from datasets import Dataset

    dataset = Dataset.from_dict({"anchor": ["a"], "positive": ["p"], "negative": ["n"]})
    assert triplets_from_hf_dataset(dataset) == [Triplet("a", "p", "n")]
