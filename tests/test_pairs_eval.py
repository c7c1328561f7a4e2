"""``pcctune eval --pairs`` and ``pcctune.evaluate(model, pairs=...)``: a user's own test set, scored as STS-B is,
with a paired bootstrap interval, in the same record, table and report as the seven tasks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import bootstrap, spearmanr

import pcctune
from pcctune.data.tasks import load_task
from pcctune.errors import PcctuneError
from pcctune.evaluation.interval import bootstrap_interval
from pcctune.modeling.build import build_model
from pcctune.orchestration.evaluate import run_eval
from pcctune.results import EvalResult
from tests.conftest import assert_one_line_error, pairs_jsonl, run_cli, write_csv


def _stsb_test_csv(senteval, path):
    """The STS-B test split of a SentEval folder, written as a user would: a quoted csv."""
    pairs = load_task(senteval, "STSBenchmark").pairs
    return write_csv(path, [(p.sentence1, p.sentence2, p.score) for p in pairs])


def test_a_file_holding_stsb_test_scores_as_the_built_in_task(shared_senteval, tiny_bert, tmp_path):
    builtin = run_eval(str(tiny_bert), shared_senteval)  # simcse-senteval: STS-B is one split, scored whole
    mine = run_eval(str(tiny_bert), None, pairs=[_stsb_test_csv(shared_senteval, tmp_path / "stsb_test.csv")])
    (expected,) = [s for s in builtin.sts_detail or [] if s.name == "STSBenchmark"]
    (score,) = mine.sts_detail or []
    assert mine.sts == {"stsb_test": pytest.approx(builtin.sts["STSBenchmark"], abs=1e-6)}  # no avg of one's own sets
    assert (score.n, score.spearman, score.pearson) == pytest.approx((expected.n, expected.spearman, expected.pearson))
    assert mine.data_dir is None and list(mine.data_files_sha256) == ["stsb_test.csv"]  # no absolute path

    model = build_model(str(tiny_bert))
    from_python = pcctune.evaluate(model, pairs=tmp_path / "stsb_test.csv")
    assert from_python.sts == mine.sts


def _varied_pairs(path, count=40):
    return pairs_jsonl(path, count, distinct=True)


def test_the_interval_is_a_seeded_paired_bootstrap_around_the_score(tiny_bert, tmp_path):
    path = _varied_pairs(tmp_path / "mine.jsonl")
    first = run_eval(str(tiny_bert), None, pairs=[path], seed=3)
    again = run_eval(str(tiny_bert), None, pairs=[path], seed=3)
    other = run_eval(str(tiny_bert), None, pairs=[path], seed=4)
    (score,) = first.sts_detail or []
    interval = score.interval
    assert interval is not None and score.n == 40 and interval.confidence == 0.95 and interval.seed == 3
    assert interval.spearman[0] < score.spearman < interval.spearman[1]
    assert interval.pearson[0] < score.pearson < interval.pearson[1]
    assert (again.sts_detail or [])[0].interval == interval
    assert (other.sts_detail or [])[0].interval != interval


def test_the_vectorised_statistic_is_scipys_spearman():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 6, 60).astype(float)  # ties, as real gold scores have
    cosines = gold / 5 + rng.normal(0, 0.4, 60)
    ours = bootstrap_interval(cosines, gold, seed=1, resamples=400)
    theirs = bootstrap(
        (cosines, gold),
        lambda x, y: spearmanr(x, y).statistic * 100,
        n_resamples=400,
        batch=500,
        vectorized=False,
        paired=True,
        rng=np.random.default_rng(1),
    )
    assert ours is not None
    assert ours.spearman == pytest.approx(tuple(theirs.confidence_interval), abs=1e-6)


def test_columns_by_name_hub_layouts_and_datasets_score_the_same(tiny_bert, tmp_path):
    path = _varied_pairs(tmp_path / "mine.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    renamed = tmp_path / "renamed.tsv"
    lines = ["question\tanswer\tsimilarity_0_to_1"]
    lines += [f"{r['sentence1']}\t{r['sentence2']}\t{r['score'] / 5}" for r in rows]  # another scale
    renamed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    hub_layout = tmp_path / "hub-copy"
    hub_layout.mkdir()
    (hub_layout / "test.jsonl").write_text(path.read_text(), encoding="utf-8")

    reference = run_eval(str(tiny_bert), None, pairs=[path]).sts["mine"]  # type: ignore[index]
    columns = {"sentence1": "question", "sentence2": "answer", "score": "similarity_0_to_1"}
    by_name = run_eval(str(tiny_bert), None, pairs=[renamed], columns=columns).sts
    from_folder = run_eval(str(tiny_bert), None, pairs=[str(hub_layout)], split="test").sts
    from datasets import Dataset

    dataset = Dataset.from_list(rows)
    in_memory = pcctune.evaluate(build_model(str(tiny_bert)), pairs=[dataset]).sts
    assert by_name == {"renamed": pytest.approx(reference)}
    assert from_folder == {str(hub_layout): pytest.approx(reference)}
    assert in_memory == {"dataset": pytest.approx(reference)}


def test_two_files_with_one_stem_keep_both(tiny_bert, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = _varied_pairs(tmp_path / "a" / "pairs.jsonl"), pairs_jsonl(tmp_path / "b" / "pairs.jsonl", 12)
    result = run_eval(str(tiny_bert), None, pairs=[first, second])
    assert list(result.sts or {}) == [str(first), str(second)]


def test_cli_prints_the_interval_and_the_report_shows_it(tiny_bert, tmp_path, capsys):
    path = _varied_pairs(tmp_path / "mine.jsonl")
    out = tmp_path / "mine.json"
    code, output = run_cli(["eval", str(tiny_bert), "--pairs", str(path), "--output", str(out)], capsys)
    assert code == 0, output
    (score,) = EvalResult.from_disk(out).sts_detail or []
    assert score.interval is not None
    low, high = score.interval.spearman
    assert "95 % interval" in output and f"[{low:.2f}, {high:.2f}]" in output
    code, output = run_cli(["report", str(out), "--output", str(tmp_path / "report")], capsys)
    assert code == 0, output
    report = (tmp_path / "report" / "report.md").read_text()
    sts_section, interval_section = report.split("## ")[1:]
    assert sts_section.startswith("STS") and f"| {tiny_bert} | {score.spearman:.2f} |" in sts_section
    assert f"| mine | 40 | {score.spearman:.2f} | [{low:.2f}, {high:.2f}] |" in interval_section


@pytest.mark.parametrize(
    ("name", "text", "options", "message"),
    [
        ("p.csv", "sentence1,sentence2\na,b\nc,d\n", [], "no column among score"),
        (  # the columns are there under other names: the command line's options that name them, filled in
            "p.csv",
            "first,second,gold\na,b,1\nc,d,2\n",
            [],
            "; name them with --sentence1-column first --sentence2-column second --score-column gold",
        ),
        (
            "p.csv",
            "sentence1,sentence2,score\na,b,1\nc,d,2\n",
            ["--score-column", "gold"],
            "no column 'gold' for score",
        ),
        ("p.csv", "sentence1,sentence2,score\na,b,1\nc,d,high\n", [], "'high' is not a number"),
        ("p.jsonl", '{"sentence1": "a", "sentence2": "b", "score": "n/a"}\n', [], "'n/a' is not a number"),
        ("p.csv", "sentence1,sentence2,score\n", [], "no pairs in it"),
        ("p.tsv", "", [], "no pairs in it"),
        ("p.csv", "sentence1,sentence2,score\na,b,3\nc,d,4\n", [], "2 pair(s); a test set needs at least 3"),
        ("p.csv", "sentence1,sentence2,score\na,b,3\nc,d,3\ne,f,3\n", [], "a correlation needs different scores"),
        ("p.txt", "a,b,1\n", [], "unsupported pair file type"),
        (
            "p.csv",
            "sentence1,sentence2,score\na,b,1\nc,d,2\ne,f,3\n",
            ["--tasks", "transfer"],
            "(--pairs) replace the seven",
        ),
    ],
)
def test_bad_pair_files_are_one_line_errors(tiny_bert, tmp_path, capsys, name, text, options, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, output = run_cli(["eval", str(tiny_bert), "--pairs", str(path), *options], capsys)
    assert_one_line_error(code, output, message)


def test_column_options_need_pairs_and_missing_files_are_named(tiny_bert, tmp_path, capsys):
    code, output = run_cli(["eval", str(tiny_bert), "--score-column", "gold"], capsys)
    assert_one_line_error(code, output, "pass --pairs FILE")
    code, output = run_cli(["eval", str(tiny_bert), "--pairs", str(tmp_path / "gone.csv")], capsys)
    assert_one_line_error(code, output, "missing file")


def test_python_errors_are_pcctune_errors(tiny_bert, tmp_path):
    path = write_csv(tmp_path / "p.csv", [("a", "b", 1), ("c", "d", 2)], header=("s1", "s2", "score"))
    with pytest.raises(PcctuneError, match="no column among sentence1.*; map them with columns: {sentence1: s1, "):
        pcctune.evaluate(build_model(str(tiny_bert)), pairs=path)
    with pytest.raises(PcctuneError, match="unknown column role 'text'"):
        pcctune.evaluate(build_model(str(tiny_bert)), pairs=path, columns={"text": "s1"})
