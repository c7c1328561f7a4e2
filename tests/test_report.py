"""pcctune report: tables with deltas from eval and train results, plots, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pcctune.errors import PcctuneError
from pcctune.evaluation.report import scatter_plot
from pcctune.evaluation.tables import ScoreTable
from pcctune.orchestration.records import load_records
from pcctune.orchestration.report import report_rows, section_rows
from pcctune.results import EvalResult, RunResult
from tests.conftest import run_cli

TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"]


def _write(path, payload):
    path.write_text(json.dumps(payload))
    return path


def _eval(path, model, sts, **sections):
    return EvalResult(protocol="simcse-senteval", model=model, data_dir="d", sts=sts, **sections).to_disk(path)


def markdown_table(runs, section):
    return ScoreTable.from_rows(section_rows(runs, section)).to_markdown(deltas=True)


def test_tables_from_eval_and_train_results(tmp_path):
    _eval(tmp_path / "eval.json", "base", dict.fromkeys(TASKS, 70.0), transfer={"MR": 80.0})
    run = tmp_path / "run"
    RunResult(
        protocol="simcse-senteval",
        data_dir="d",
        seed=1,
        config={"model": "m"},
        sts_by_stage={"before": dict.fromkeys(TASKS, 70.0), "pcc": dict.fromkeys(TASKS, 72.5)},
    ).to_disk(run / "results.json")
    runs = report_rows(load_records([tmp_path / "eval.json", run]))
    assert [row.label for row in runs] == ["base", "m: before", "m: pcc"]
    table = markdown_table(runs, "sts")
    assert "| m: pcc | 72.50 (+2.50)" in table and "STS-B" in table
    assert markdown_table(runs, "transfer").count("\n") == 2  # header, rule, one run


def test_a_record_of_some_tasks_first_keeps_the_tasks_usual_order(tmp_path):
    """An eval record of STS-B and STS12 alone (``pcctune eval --tasks STSBenchmark,STS12``) before one of all seven:
    the columns read STS12 … SICK-R, as for the seven alone; a user's own set and the average follow them."""
    _eval(tmp_path / "some.json", "some", {"STSBenchmark": 80.0, "mine": 50.0, "STS12": 70.0})
    _eval(tmp_path / "all.json", "all", dict.fromkeys(TASKS, 75.0))
    runs = report_rows(load_records([tmp_path / "some.json", tmp_path / "all.json"]))
    header = markdown_table(runs, "sts").splitlines()[0]
    assert header == "| run | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B | SICK-R | mine | avg |"


def test_report_cli_writes_markdown_and_plots(tmp_path, capsys):
    path = _eval(tmp_path / "a.json", "a", dict.fromkeys(TASKS, 60.0))
    second = _eval(tmp_path / "b.json", "b", dict.fromkeys(TASKS, 65.0))
    code, out = run_cli(["report", str(path), str(second), "--output", str(tmp_path / "rep")], capsys)
    assert code == 0 and "(+5.00)" in out
    assert (tmp_path / "rep" / "report.md").is_file() and (tmp_path / "rep" / "sts_bars.png").stat().st_size > 1000


def test_report_plots_a_models_cosines_against_the_gold_scores(tmp_path, capsys, tiny_bert, shared_senteval):
    path = _eval(tmp_path / "a.json", "a", dict.fromkeys(TASKS, 60.0))
    scatter = ["--scatter-model", str(tiny_bert), "--scatter-task", "STS12", "--data", str(shared_senteval)]
    code, out = run_cli(["report", str(path), "--output", str(tmp_path / "rep"), *scatter], capsys)
    assert code == 0, out
    assert "## Predicted vs gold\n\n![scatter](scatter.png)" in (tmp_path / "rep" / "report.md").read_text()
    assert (tmp_path / "rep" / "scatter.png").stat().st_size > 1000


def test_bad_result_files(tmp_path):
    with pytest.raises(PcctuneError, match="no result JSON"):
        report_rows(load_records([tmp_path / "missing"]))
    with pytest.raises(PcctuneError, match="not a pcctune result"):
        report_rows(load_records([_write(tmp_path / "x.json", {"other": 1})]))


def test_scatter_plot(tmp_path):
    path = scatter_plot(np.linspace(0, 1, 20), np.linspace(0, 5, 20), "t", tmp_path / "s.png")
    assert path.stat().st_size > 1000


def test_a_run_record_of_schema_1_reads_its_scores_as_sts_by_stage(tmp_path):
    import json

    from pcctune.results import SCHEMA_VERSION, RunResult, parse_result

    old = {"kind": "run", "schema_version": 1, "protocol": "p", "data_dir": "d", "seed": 1, "config": {}}
    record = parse_result({**old, "sts": {"pcc": {"STS12": 70.0, "avg": 70.0}}})
    assert isinstance(record, RunResult) and record.sts_by_stage == {"pcc": {"STS12": 70.0, "avg": 70.0}}
    saved = json.loads(record.to_disk(tmp_path / "r.json").read_text())
    assert saved["schema_version"] == SCHEMA_VERSION and "sts" not in saved and saved["sts_by_stage"]


def test_report_shows_each_comparison_record_with_its_table_and_verdict(tmp_path, capsys):
    from tests.test_compare import write_runs

    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", {"STS12": 1.0})
    write_runs(tmp_path, "c", {})
    a, b, c = (f"{tmp_path}/{side}-*" for side in "abc")
    assert run_cli(["compare", a, f"pearson={b}", "--output", str(tmp_path / "two.json")], capsys)[0] == 0
    family = ["compare", f"cosine={a}", f"pearson={b}", f"cosent={c}", "--output", str(tmp_path / "family.json")]
    assert run_cli(family, capsys)[0] == 0
    code, printed = run_cli(
        ["report", str(tmp_path / "two.json"), str(tmp_path / "family.json"), "--output", str(tmp_path / "rep")], capsys
    )
    assert code == 0, printed
    report = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "## pearson − A, Spearman × 100 (two.json)" in report and "| STS12 |" in report
    assert "\navg: " in report  # the headline difference in words
    assert "## B − cosine on avg, Spearman × 100 (family.json)" in report
    assert "- pearson − cosine: " in report and "- cosent − cosine: " in report
    assert "Holm's decisions over the same family" in report
    assert "![family](family_1.png)" in report and (tmp_path / "rep" / "family_1.png").stat().st_size > 1000
    assert "## STS" not in report  # comparison records add no score rows


def test_a_sweep_summary_reports_its_winners_seed_runs(tmp_path, capsys):
    from pcctune.results import BenchmarkResult, BenchmarkRow

    rows = [BenchmarkRow(label=f"seed {seed}", sts=dict.fromkeys(TASKS, 70.0 + seed)) for seed in (1, 2)]
    BenchmarkResult(name="sweep", rows=[*rows, BenchmarkRow(label="no scores")]).to_disk(tmp_path / "s" / "sweep.json")
    runs = report_rows(load_records([tmp_path / "s"]))
    # a row without scores is no row of the table
    assert [row.label for row in runs] == ["sweep: seed 1", "sweep: seed 2"]
    code, printed = run_cli(["report", str(tmp_path / "s"), "--output", str(tmp_path / "rep")], capsys)
    assert code == 0 and "| sweep: seed 2 | 72.00 (+1.00)" in printed
    BenchmarkResult(name="empty", rows=[BenchmarkRow(label="x")]).to_disk(tmp_path / "e.json")
    with pytest.raises(PcctuneError, match="no 'sts' or 'transfer' results"):
        report_rows(load_records([tmp_path / "e.json"]))


def test_a_claim_whose_rows_hold_seeds_reports_their_mean():
    """decoder_full's rows keep each seed's papers'-protocol scores; the row's scores are their mean."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "reproductions" / "decoder_full" / "runs.json"
    runs = section_rows(report_rows(load_records([path])), "sts")
    record = json.loads(path.read_text())
    pcc = next(row for row in record["rows"] if row["label"] == "stage 1 + Pcc (Pearson)")
    seeds = [seed["paper"]["avg"] for seed in pcc["details"]["seeds"]]
    assert len(seeds) == 3 and runs["decoder_full: stage 1 + Pcc (Pearson)"]["avg"] == pytest.approx(
        np.mean(seeds), abs=1e-4
    )


def test_rows_scored_under_different_protocols_are_named_beside_their_deltas(tmp_path, capsys):
    _eval(tmp_path / "a.json", "a", dict.fromkeys(TASKS, 60.0))
    _eval(tmp_path / "b.json", "b", dict.fromkeys(TASKS, 61.0))
    two = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    code, printed = run_cli(["report", *two, "--output", str(tmp_path / "r")], capsys)
    assert code == 0, printed
    assert "different STS protocols" not in printed  # one protocol: the deltas are the models'
    EvalResult(protocol="paper", model="c", data_dir="d", sts=dict.fromkeys(TASKS, 66.0)).to_disk(tmp_path / "c.json")
    files = [str(tmp_path / name) for name in ("a.json", "b.json", "c.json")]
    code, printed = run_cli(["report", *files, "--output", str(tmp_path / "r2")], capsys)
    assert code == 0, printed
    report = (tmp_path / "r2" / "report.md").read_text(encoding="utf-8")
    assert (
        "These rows were scored under different STS protocols (`simcse-senteval`: a, b; `paper`: c): a delta between "
        "rows of two protocols mixes the protocol with the model." in report
    )
    assert report.index("| c | 66.00 (+6.00)") < report.index("different STS protocols") < report.index("![sts]")


def test_the_report_names_the_prompt_each_rows_model_read(tmp_path):
    from pcctune.orchestration.report import write_report
    from tests.conftest import stage_record

    EvalResult(
        protocol="paper", model="eol", data_dir="d", prompt='This sentence : "', sts=dict.fromkeys(TASKS, 70.0)
    ).to_disk(tmp_path / "eol.json")
    stage = stage_record(False, prompt="query: ")
    sts = {"before": dict.fromkeys(TASKS, 70.0), "pcc": dict.fromkeys(TASKS, 72.0)}
    RunResult(protocol="paper", data_dir="d", seed=1, config={"model": "m"}, sts_by_stage=sts, stages=[stage]).to_disk(
        tmp_path / "run" / "results.json"
    )
    report = write_report([tmp_path / "eol.json", tmp_path / "run"], tmp_path / "r")
    assert '| eol | "This sentence : \\"" |' in report and '| m: pcc | "query: " |' in report
    assert "| m: before | - |" in report  # the base model's prompt is not in the record
    _eval(tmp_path / "plain.json", "plain", dict.fromkeys(TASKS, 60.0))
    assert "## Prompts" not in write_report([tmp_path / "plain.json"], tmp_path / "r2")


def test_the_printed_report_keeps_each_markdown_line_whole_however_wide(tmp_path, capsys):
    long = "a-model-name-" * 8  # a row far wider than the console's 160 columns
    _eval(tmp_path / "a.json", long, dict.fromkeys(TASKS, 60.123))
    _eval(tmp_path / "b.json", long + "b", dict.fromkeys(TASKS, 65.456))
    code, printed = run_cli(
        ["report", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--output", str(tmp_path / "r")], capsys
    )
    assert code == 0, printed
    written = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert written in printed  # printed as written: no line broken at the console's width
    assert max(map(len, written.splitlines())) > 160
