"""A stage's cost record: wall time counts pauses, CPU time does not; an older checkpoint leaves CPU time unknown."""

from __future__ import annotations

import json
import time

from pcctune.training.memory import PeakMemory
from pcctune.training.stage_cost import COST_FILE, StageClock, StageCost, cost_in


def test_cpu_time_leaves_out_what_the_process_did_not_spend_computing():
    with PeakMemory() as memory:
        clock = StageClock(StageCost(seconds=10.0, sessions=1, cpu_seconds=7.0), memory)
        time.sleep(0.6)  # a stopped or waiting process: wall time passes, no CPU time
        total = clock.total()
    assert total.seconds >= 10.6 and total.sessions == 2
    assert 7.0 <= total.cpu_seconds < 7.3


def test_a_checkpoint_from_before_the_cpu_count_leaves_it_unknown(tmp_path):
    older, newer = tmp_path / "older", tmp_path / "newer"
    for folder, cost in (
        (older, {"seconds": 5.0, "peak_memory_mb": 1.0, "sessions": 1}),
        (newer, {"cpu_seconds": 4.0}),
    ):
        folder.mkdir()
        (folder / COST_FILE).write_text(json.dumps(cost))
    assert cost_in(str(older)).cpu_seconds is None and cost_in(str(newer)).cpu_seconds == 4.0
    assert cost_in(None) == StageCost()
    with PeakMemory() as memory:
        assert StageClock(cost_in(str(older)), memory).total().cpu_seconds is None
