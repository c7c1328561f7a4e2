"""Every benchmark script (measurements of the software itself) follows one pattern: it imports, answers
``--help``, runs ``--quick`` on tiny random models in seconds and leaves its typed record and table; no function is
longer than 50 lines, and the folder stays small (the reproductions of the papers' claims live in reproductions/)."""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks._common import Benchmark, run

from pcctune.cpu_kind import this_cpu
from pcctune.data.tasks import SEVEN_TASKS
from pcctune.results import BenchmarkResult

ROOT = Path(__file__).parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_the_benchmarks_folder_is_found_and_its_readme_lists_every_script():
    assert SCRIPTS
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    assert [s.name for s in SCRIPTS if f"`{s.name}`" not in readme] == []


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_answers_help(script):
    done = _run(script, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout and "--quick" in done.stdout


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_runs_quick_and_prints_the_table_of_its_record(script, tmp_path):
    done = _run(script, "--quick", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    record = BenchmarkResult.from_disk(tmp_path / "runs.json")
    assert record.rows and record.settings
    table = (tmp_path / "table.md").read_text()
    assert table.startswith("|") and table.strip() in done.stdout.replace("\r", "")
    again = _run(script, "--summarize", "--output", str(tmp_path))  # the table again, from the record alone
    assert again.returncode == 0 and (tmp_path / "table.md").read_text() == table, again.stderr[-2000:]


def test_a_ctrl_c_during_a_measured_start_up_stops_the_benchmark(monkeypatch, tiny_bert, mini_senteval, tmp_path):
    """The start-up benchmark stops its run at the first step by an exception of its own: a real Ctrl-C (here,
    during the start-up) is not taken for it and written down as a start-up that never reached a step."""
    import pcctune.orchestration.pipeline as pipeline
    from tests.conftest import write_run_config

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    speed = importlib.import_module("speed")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "run_pipeline", interrupted)
    config = write_run_config(tmp_path, tiny_bert, mini_senteval, tmp_path / "run")
    unset = dict.fromkeys(("data", "batch", "eval_steps", "max_steps"))
    args = argparse.Namespace(
        train_config=config, work=tmp_path / "work", score_base=False, model=str(tiny_bert), **unset
    )
    with pytest.raises(KeyboardInterrupt):
        speed.startup_seconds(args)


def test_an_output_that_cannot_be_a_folder_is_refused_in_one_line_before_the_measurement(tmp_path, capsys):
    measured: list[str] = []
    benchmark = Benchmark("probe", "A probe.", lambda args: measured.append("ran"), str, lambda parser: None)
    file = tmp_path / "a-file"
    file.write_text("kept\n")
    with pytest.raises(SystemExit) as stop:
        run(benchmark, ["--output", str(file)])
    assert stop.value.code == 2 and measured == [] and file.read_text() == "kept\n"
    assert capsys.readouterr().err == f"error: --output {file} is a file; give a folder\n"
    with pytest.raises(SystemExit) as stop:
        run(benchmark, ["--summarize", "--output", str(tmp_path / "none")])
    assert stop.value.code == 2 and not (tmp_path / "none").exists()
    assert capsys.readouterr().err.startswith("error: nothing to summarize: no ")


def test_a_scripts_help_says_its_first_line_once_and_keeps_its_examples_as_written(capsys):
    benchmark = Benchmark("probe", "A probe.\n\n    probe --flag   # an example\n", list, str, lambda parser: None)
    with pytest.raises(SystemExit) as stop:
        run(benchmark, ["--help"], prog="python -m reproductions probe --")
    out = capsys.readouterr().out
    assert stop.value.code == 0 and out.startswith("usage: python -m reproductions probe -- ")
    assert out.count("A probe.") == 1 and "\n    probe --flag   # an example\n" in out


def test_the_benchmarks_folder_stays_small():
    """A budget for the folder's code: speed.py's four parts and the plain script; one-off probes are retired to
    their records (their code stays in git history)."""
    lines = sum(len(path.read_text().splitlines()) for path in (ROOT / "benchmarks").glob("*.py"))
    assert lines <= 1000
    assert not list((ROOT / "benchmarks").glob("*.sh"))


def test_no_benchmark_or_reproduction_function_is_longer_than_50_lines():
    long = []
    for script in [*SCRIPTS, *(ROOT / "benchmarks").glob("_*.py"), *(ROOT / "reproductions").rglob("*.py")]:
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 50:
                long.append(f"{script.name}:{node.name}")
    assert long == []


def test_the_plain_training_script_has_no_pcctune_in_it():
    tree = ast.parse((ROOT / "benchmarks" / "_plain_st_train.py").read_text())
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert "sentence_transformers" in imported and not [name for name in imported if name.startswith("pcctune")]


def test_speed_train_runs_quick_and_records_each_job_with_its_parts_cpu_and_flops(tmp_path):
    """``--only train startup scale --quick``: the four training jobs, the two start-ups (the base model scored
    before the first step, then read from the cache) and the paper's 7B recipe on a tiny random decoder, each row
    with what it says."""
    parts = ("train", "startup", "scale")
    done = _run(
        ROOT / "benchmarks" / "speed.py", "--quick", "--score-base", "--only", *parts, "--output", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = BenchmarkResult.from_disk(tmp_path / "runs.json")
    jobs = {row.label: row for row in record.rows if row.details["what"] == "train"}
    plain = jobs.pop("plain sentence-transformers script (CosineSimilarityLoss)")
    assert set(jobs) == {"pcctune train", "pcctune train, loss cosine_mse", "pcctune train, speed settings off"}
    assert "--set stages.0.loss=cosine_mse" in jobs["pcctune train, loss cosine_mse"].details["command"]
    assert "--set onednn=false" in jobs["pcctune train, speed settings off"].details["command"]
    off = jobs["pcctune train, speed settings off"]
    assert off.details["command"].startswith("PCCTUNE_CPU_SPEEDUPS=0 python")
    assert abs(off.sts["avg"] - jobs["pcctune train"].sts["avg"]) < 0.05  # the settings change no number
    assert "_plain_st_train.py" in plain.details["command"] and "--batch-size 2" in plain.details["command"]
    for row in [*jobs.values(), plain]:
        details = row.details
        assert details["settings"]["batch_size"] == 2 and details["steps"] >= 1 and details["dev_evaluations"] >= 1
        for key in ("seconds", "cpu_s", "peak_mb", "train_runtime_s", "dev_eval_s", "test_eval_s"):
            assert len(details[key]) == 1 and details[key][0] > 0, key
        assert details["flops"] == sum(details["flops_by_part"].values()) > 0 and details["peak_fraction"] > 0
        assert set(row.sts) == {*SEVEN_TASKS, "avg"} and set(details["sts_before"]) == set(row.sts)
    assert abs(jobs["pcctune train, loss cosine_mse"].sts["avg"] - plain.sts["avg"]) < 0.5  # the same job
    startups = {row.label: row.details for row in record.rows if row.details["what"] == "startup"}
    assert set(startups) == {"first run (nothing cached)", "second run (cache hit)"}
    assert all(len(row["seconds"]) == 1 and row["seconds"][0] > 0 and row["same_report"] for row in startups.values())
    assert startups["second run (cache hit)"]["leakage"]["total_kept"] > 0
    cpu = record.details["cpu"]
    assert cpu["identity"].startswith(f"{this_cpu().vendor} family {this_cpu().family} model {this_cpu().model} (")
    assert cpu["cores"] >= 1 and cpu["fp32_peak_gflops"] > 0 and "bf16_peak_gflops" in cpu
    assert "× faster than the plain script" in (tmp_path / "table.md").read_text()
    _check_scale_rows([row.details | {"label": row.label} for row in record.rows if row.details["what"] == "scale"])


def _check_scale_rows(rows: list[dict]) -> None:
    """configs/paper_7b_qlora.yaml (batches of 8, mini-batches of 4) at 2 layers of hidden size 64 on the CPU: both
    stages' two steps timed, real tokens counted, 8·N FLOPs a token (forward, its recomputation, GradCache's first
    pass, input gradients; QLoRA trains no base weight), stage 1 projected over SimCSE's 275,601 triplets; the
    miniature stage-2 set is too small to count, so the full run's hours are unknown."""
    stage1, stage2, whole = rows
    assert (stage1["label"], stage2["label"], whole["label"]) == ("contrastive-nli", "pcc", "full run (its steps)")
    assert stage1["linear_weights"] == 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128)  # q, o; k, v (2 of 4 heads); MLP
    for row in (stage1, stage2):
        assert len(row["seconds"]) == 2 and min(row["seconds"]) > 0 and row["peak_gib"] > 0
        assert row["flops_per_token_n"] == 8 and row["bf16_peak_fraction"] is None
        assert row["tflops"] == pytest.approx(8 * row["linear_weights"] * row["tokens_per_s"] / 1e12)
        assert row["device"].startswith("cpu: ") and row["shape"]["num_hidden_layers"] == 2
    assert min(stage1["tokens"]) >= 3 * 8 and min(stage2["tokens"]) >= 2 * 8  # every text of a batch
    assert stage1["full_steps"] == 275_601 // 8
    assert stage1["projected_h"] == pytest.approx(stage1["full_steps"] * stage1["mean_s"] / 3600)
    assert stage2["full_steps"] is None and whole["projected_h"] is None
