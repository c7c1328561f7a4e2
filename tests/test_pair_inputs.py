"""The edges of a user's pair data, each a clear answer at once: a folder with no pair file, an empty sentence, a
tab-separated ``.csv``, and a local name that does not exist (never sent to the Hub as a dataset id)."""

from __future__ import annotations

import logging
import time

import pytest

from pcctune.data.local import is_local
from pcctune.data.pairs import load_pair_set, read_pairs_file
from pcctune.errors import PcctuneError
from tests.conftest import assert_one_line_error, run_cli


@pytest.fixture()
def no_hub(monkeypatch):
    """Any question to the Hub fails the test."""
    import datasets

    def asked(*args, **kwargs):
        raise AssertionError("the Hub was asked")

    monkeypatch.setattr(datasets, "load_dataset", asked)


def test_a_folder_without_pair_files_is_refused_at_once(tiny_bert, shared_senteval, capsys, no_hub):
    started = time.perf_counter()
    with pytest.raises(PcctuneError, match="a folder with no pair file in it"):
        load_pair_set(str(shared_senteval.parent))  # the SentEval folder's files lie deeper than a dataset's
    assert time.perf_counter() - started < 1
    code, output = run_cli(["eval", str(tiny_bert), "--pairs", str(shared_senteval)], capsys)
    assert_one_line_error(code, output, "a folder with no pair file in it")


def test_a_folder_in_the_hubs_layout_is_still_read(tmp_path):
    folder = tmp_path / "mine"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "test.csv").write_text("sentence1,sentence2,score\na,b,1\nc,d,2\ne,f,3\n", encoding="utf-8")
    assert [p.score for p in load_pair_set(str(folder)).pairs] == [1.0, 2.0, 3.0]


def test_an_empty_sentence_is_a_warning_naming_its_rows(tmp_path, caplog):
    path = tmp_path / "p.csv"
    path.write_text('sentence1,sentence2,score\na,b,1\n,d,2\ne," ",3\ng,h,4\n', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        pairs = read_pairs_file(path)
    assert len(pairs) == 4
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning == f"{path}: an empty sentence in rows 2, 3 (of 4 pairs)"


def test_a_tab_separated_csv_is_told_to_be_a_tsv(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text('sentence1\tsentence2\tscore\nHe said "hi\tb\t1\n', encoding="utf-8")
    with pytest.raises(PcctuneError, match="separated by tabs, not commas: name it mine.tsv"):
        read_pairs_file(path)


@pytest.mark.parametrize("name", ["my_pairs.csv", "./my_pairs", "../my_pairs", "data/test.jsonl", "~/nothing-here"])
def test_a_name_that_looks_like_a_path_and_is_missing_says_so_instead_of_asking_the_hub(
    name, tmp_path, monkeypatch, no_hub
):
    monkeypatch.chdir(tmp_path)
    assert is_local(name)
    with pytest.raises(PcctuneError, match=f"missing file or folder: {name}"):
        load_pair_set(name)


def test_a_name_without_its_extension_points_at_the_file(tmp_path, monkeypatch, no_hub, capsys, tiny_bert):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_pairs.csv").write_text("sentence1,sentence2,score\na,b,1\nc,d,2\n", encoding="utf-8")
    code, output = run_cli(["eval", str(tiny_bert), "--pairs", "my_pairs"], capsys)
    assert_one_line_error(code, output, "missing file or folder: my_pairs; did you mean my_pairs.csv?")


def test_a_hub_id_is_still_a_hub_id():
    assert not is_local("mteb/stsbenchmark-sts") and not is_local("glue")


def test_a_run_warns_of_an_empty_sentence_once(tmp_path, shared_senteval, caplog):
    from pcctune.training.config import StageConfig
    from pcctune.training.datasets import check_stage_data, checked_pairs, scored_pairs

    path = tmp_path / "p.csv"
    path.write_text("sentence1,sentence2,score\n" + "".join(f"a{i},b{i},{i % 5}\n" for i in range(9)) + ",d,2\n")
    data = {"source": "pairs", "path": str(path)}
    stage = StageConfig.model_validate({"name": "s", "loss": "pearson", "data": data, "batch_size": 4})
    with caplog.at_level(logging.WARNING):
        check_stage_data(stage, shared_senteval)  # what a run checks first, then reads to train and to audit
        assert len(scored_pairs(stage.data, shared_senteval)) == len(checked_pairs(stage.data, shared_senteval).pairs)
    warnings = [r.getMessage() for r in caplog.records if "an empty sentence" in r.getMessage()]
    assert warnings == [f"{path}: an empty sentence in row 10 (of 10 pairs)"]
