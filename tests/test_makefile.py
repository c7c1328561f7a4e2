"""The Makefile's demo: the one line that may fetch the STS data keeps a caller's offline setting."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def demo_data_line(**env: str) -> str:
    """The command ``make demo`` runs to find (or fetch) the STS data, as ``make -n`` prints it."""
    environment = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"} | env
    done = subprocess.run(["make", "-n", "demo"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-1000:]
    (line,) = [line for line in done.stdout.splitlines() if "pcctune data tasks" in line]
    return line


@pytest.mark.parametrize(("given", "used"), [(None, "0"), ("1", "1"), ("0", "0")])
def test_demo_fetches_only_where_the_caller_did_not_turn_the_hub_off(given, used):
    line = demo_data_line(**({} if given is None else {"HF_HUB_OFFLINE": given}))
    assert line.startswith(f"HF_HUB_OFFLINE={used} ")
