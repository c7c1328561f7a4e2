"""Every reproduction runs ``--quick`` on tiny random models, as CI runs it (its own file, so that the test
runners put it beside the rest of the suite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reproductions.__main__ import claims

from pcctune.results import BenchmarkResult

ROOT = Path(__file__).parents[1]


def test_the_runner_runs_every_claim_quick_on_tiny_models(tmp_path):
    command = [sys.executable, "-m", "reproductions", "all", "--quick", "--output", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in claims():
        record = BenchmarkResult.from_disk(tmp_path / name / "runs.json")
        assert record.rows, name
        assert (tmp_path / name / "table.md").read_text().startswith("|"), name
