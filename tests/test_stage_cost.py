"""A stage's cost record: wall time counts pauses, CPU time does not; each process's thread count is kept; an older
checkpoint leaves what it did not count unknown."""

from __future__ import annotations

import json
import time

import torch

from pcctune.training.memory import PeakMemory
from pcctune.training.stage_cost import COST_FILE, StageClock, StageCost, cost_in


def test_cpu_time_leaves_out_what_the_process_did_not_spend_computing():
    with PeakMemory() as memory:
        clock = StageClock(StageCost(seconds=10.0, sessions=1, cpu_seconds=7.0), memory)
        time.sleep(0.6)  # a stopped or waiting process: wall time passes, no CPU time
        total = clock.total()
    assert total.seconds >= 10.6 and total.sessions == 2
    assert 7.0 <= total.cpu_seconds < 7.3


def test_each_process_that_trained_the_stage_adds_its_thread_count(tmp_path):
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with PeakMemory() as memory:
            first = StageClock(StageCost(), memory).total()
        (tmp_path / COST_FILE).write_text(json.dumps({**first.__dict__, "threads": list(first.threads)}))
        torch.set_num_threads(2)
        with PeakMemory() as memory:
            resumed = StageClock(cost_in(str(tmp_path)), memory).total()
    finally:
        torch.set_num_threads(threads)
    assert first.threads == (1,) and resumed.threads == (1, 2) and resumed.sessions == 2


def test_a_process_whose_steps_ran_on_more_threads_than_it_began_with_records_the_most():
    """A callback after the clock may raise the thread count for a step and lower it after (a job sharing the cores
    with others): the record keeps what the steps ran on, not what training began with."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with PeakMemory() as memory:
            clock = StageClock(StageCost(), memory)
            clock.on_train_begin(None, None, None)
            torch.set_num_threads(2)  # the step's share
            clock.on_step_end(None, None, None)
            torch.set_num_threads(1)  # given back
            clock.on_step_end(None, None, None)
            total = clock.total()
    finally:
        torch.set_num_threads(threads)
    assert total.threads == (2,)


def test_a_checkpoint_from_before_the_cpu_count_leaves_it_unknown(tmp_path):
    older, newer = tmp_path / "older", tmp_path / "newer"
    for folder, cost in (
        (older, {"seconds": 5.0, "peak_memory_mb": 1.0, "sessions": 1}),
        (newer, {"cpu_seconds": 4.0}),
    ):
        folder.mkdir()
        (folder / COST_FILE).write_text(json.dumps(cost))
    assert cost_in(str(older)).cpu_seconds is None and cost_in(str(newer)).cpu_seconds == 4.0
    assert cost_in(str(older)).threads is None and cost_in(None) == StageCost()
    unknown = cost_in(str(tmp_path))  # a checkpoint whose cost file was never written: its process is counted
    assert (unknown.sessions, unknown.cpu_seconds, unknown.threads) == (1, None, None)
    with PeakMemory() as memory:
        total = StageClock(cost_in(str(older)), memory).total()
    assert total.cpu_seconds is None and total.threads is None
