"""Every benchmark script (measurements of the software itself) follows one pattern: it imports, answers
``--help``, runs ``--quick`` on tiny random models in seconds and leaves its typed record and table; no function is
longer than 50 lines, and the folder stays small (the reproductions of the papers' claims live in reproductions/)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from pcctune.results import BenchmarkResult

ROOT = Path(__file__).parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_the_benchmarks_folder_is_found_and_its_readme_lists_every_script():
    assert len(SCRIPTS) >= 4
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


def test_the_benchmarks_folder_stays_small():
    lines = sum(len(path.read_text().splitlines()) for path in (ROOT / "benchmarks").glob("*.py"))
    assert lines <= 1000
    assert not list((ROOT / "benchmarks").glob("*.sh"))


def test_no_benchmark_or_reproduction_function_is_longer_than_50_lines():
    long = []
    for script in [*SCRIPTS, ROOT / "benchmarks" / "_common.py", *(ROOT / "reproductions").rglob("*.py")]:
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 50:
                long.append(f"{script.name}:{node.name}")
    assert long == []
