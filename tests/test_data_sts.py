"""Readers of STS pairs: SentEval folders, STS-B csv, SICK, generic files, Hugging Face datasets."""

from __future__ import annotations

import json

import pytest

from pcctune.data.pairs import pairs_from_hf_dataset, read_pairs_file
from pcctune.data.senteval import load_stsb
from pcctune.data.sts import read_sick_txt, read_stsb_csv
from pcctune.data.tasks import SEVEN_TASKS, load_task, load_test_tasks, subsample_task
from pcctune.errors import PcctuneError
from pcctune.testing import write_lines
from tests.conftest import SENTENCES


def test_sts_year_drops_empty_gold_and_takes_first_two_fields(mini_senteval):
    task = load_task(mini_senteval, "STS16")
    beta = next(s for s in task.subsets if s.name == "beta")
    assert len(beta.pairs) == 3  # one of four gold lines is empty
    assert beta.pairs[0].sentence2 == SENTENCES[6]  # source fields after the two sentences are ignored
    assert [p.score for p in beta.pairs] == [2.5, 4.8, 0.2]
    assert len(task.pairs) == 7


def test_stsb_csv_keeps_unbalanced_quotes_and_ignores_extra_fields(mini_senteval):
    pairs = load_stsb(mini_senteval, "train").pairs
    assert pairs[1].sentence1 == 'He said "hello'
    assert pairs[1].sentence2 == "A cat is eating."
    assert pairs[2].score == 5.0 and pairs[2].sentence2 == SENTENCES[9]


def test_seven_tasks_load(mini_senteval):
    tasks = load_test_tasks(mini_senteval)
    assert [t.name for t in tasks] == list(SEVEN_TASKS)
    assert len(tasks[5].pairs) == 5 and len(tasks[6].pairs) == 7


def test_non_numeric_score_is_a_clear_error(tmp_path):
    path = tmp_path / "sts-test.csv"
    write_lines(path, ["g\tf\t2012\t1\tfive\tA man.\tA woman."])
    with pytest.raises(PcctuneError, match=r"sts-test.csv:1: score 'five' is not a number"):
        read_stsb_csv(path)


@pytest.mark.parametrize("score", ["nan", "inf", "-Infinity"])
def test_non_finite_score_is_rejected(tmp_path, score):
    path = tmp_path / "sts-test.csv"
    write_lines(path, [f"g\tf\t2012\t1\t{score}\tA man.\tA woman."])
    with pytest.raises(PcctuneError, match=f"sts-test.csv:1: score '{score}' is not a finite number"):
        read_stsb_csv(path)


def test_short_stsb_line_is_a_clear_error(tmp_path):
    path = tmp_path / "sts-test.csv"
    write_lines(path, ["g\tf\t2012\t1\t3.0\tonly one sentence"])
    with pytest.raises(PcctuneError, match="expected 7 tab-separated fields, found 6"):
        read_stsb_csv(path)


def test_sick_without_expected_columns(tmp_path):
    path = tmp_path / "SICK_train.txt"
    write_lines(path, ["pair_ID\tsentence_A\tscore", "1\ta\t3"])
    with pytest.raises(PcctuneError, match="missing column.*sentence_B.*relatedness_score"):
        read_sick_txt(path)


def test_missing_folder_and_file(tmp_path):
    with pytest.raises(PcctuneError, match="missing folder"):
        load_task(tmp_path, "STS12")
    with pytest.raises(PcctuneError, match="missing file"):
        read_stsb_csv(tmp_path / "nope.csv")


def test_generic_csv_tsv_jsonl(tmp_path):
    (tmp_path / "p.csv").write_text('sentence1,sentence2,score\n"A, quoted",B,4.5\n', encoding="utf-8")
    (tmp_path / "p.tsv").write_text('sentence1\tsentence2\tscore\nA "half\tB\t1\n', encoding="utf-8")
    rows = [{"sentence1": "A", "sentence2": "B", "score": 2}, {"sentence1": "C", "sentence2": "D", "score": 0.5}]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert read_pairs_file(tmp_path / "p.csv")[0].sentence1 == "A, quoted"
    assert read_pairs_file(tmp_path / "p.tsv")[0].sentence1 == 'A "half'
    assert [p.score for p in read_pairs_file(tmp_path / "p.jsonl")] == [2.0, 0.5]


def test_generic_file_without_score_column(tmp_path):
    (tmp_path / "p.csv").write_text("sentence1,sentence2\nA,B\n", encoding="utf-8")
    with pytest.raises(PcctuneError, match="no column among score"):
        read_pairs_file(tmp_path / "p.csv")


def test_local_hf_dataset():
    from datasets import Dataset

    dataset = Dataset.from_dict({"sentence1": ["A", "B"], "sentence2": ["C", "D"], "score": [1.0, 4.0]})
    pairs = pairs_from_hf_dataset(dataset)
    assert [(p.sentence1, p.score) for p in pairs] == [("A", 1.0), ("B", 4.0)]


def test_subsample_is_one_seeded_subset_in_the_original_order(mini_senteval):
    task = load_task(mini_senteval, "STS12")  # 2 subsets: 4 + 3 pairs with gold
    sample = subsample_task(task, 5, seed=1)
    assert len(sample.subsets) == 1 and len(sample.pairs) == 5 and len(set(sample.pairs)) == 5
    order = {pair: index for index, pair in enumerate(task.pairs)}
    assert [order[pair] for pair in sample.pairs] == sorted(order[pair] for pair in sample.pairs)
    assert subsample_task(task, 5, seed=1).pairs == sample.pairs
    assert any(subsample_task(task, 5, seed=s).pairs != sample.pairs for s in range(2, 6))
    assert subsample_task(task, 100).pairs == task.pairs
    with pytest.raises(PcctuneError, match="at least 3"):
        subsample_task(task, 2)  # two pairs always correlate ±1
