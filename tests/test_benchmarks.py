"""Every benchmark script follows one pattern (issue 29): it imports, answers ``--help``, runs ``--quick`` on
tiny random models in seconds and leaves its typed record and table; no function is longer than 50 lines."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pcctune.results import BenchmarkResult
from tests.conftest import one_step_stage2

ROOT = Path(__file__).parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_the_benchmarks_folder_is_found_and_the_readme_lists_every_script():
    assert len(SCRIPTS) >= 9
    readme = (ROOT / "README.md").read_text()
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


def test_no_benchmark_function_is_longer_than_50_lines():
    long = []
    for script in [*SCRIPTS, ROOT / "benchmarks" / "_common.py"]:
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 50:
                long.append(f"{script.name}:{node.name}")
    assert long == []


def test_a_benchmark_run_is_kept_as_a_record_and_not_trained_again(tiny_bert, mini_senteval, tmp_path, monkeypatch):
    """Run folders are scratch that a session here may not get back: each finished run's record is kept under
    OUTPUT/records and the same run is taken from it, while a run-defining change trains again."""
    import pcctune.orchestration.library as library
    from pcctune.training.config import RunConfig

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from _common import trained_runs

    def config_of(rate: float) -> RunConfig:
        return RunConfig.model_validate(
            {"model": str(tiny_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / "runs" / "pcc")}
            | {"evaluate_before": False, "stages": [one_step_stage2(learning_rate=rate)]}
        )

    first = list(trained_runs([1], ["pcc"], lambda variant, seed: config_of(1e-3), tmp_path / "out"))
    assert (tmp_path / "out" / "records" / "pcc.json").is_file()
    shutil.rmtree(tmp_path / "runs")  # the scratch folders are lost

    class TrainedAgain(Exception):
        pass

    def refuse(*args, **kwargs):
        raise TrainedAgain

    monkeypatch.setattr(library, "train", refuse)
    again = list(trained_runs([1], ["pcc"], lambda variant, seed: config_of(1e-3), tmp_path / "out"))
    assert again[0][3] == first[0][3]
    with pytest.raises(TrainedAgain):  # another learning rate is another run, though its folder has the same name
        list(trained_runs([1], ["pcc"], lambda variant, seed: config_of(2e-3), tmp_path / "out"))
