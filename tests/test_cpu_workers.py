"""Inference batches side by side on CPU: results in order, one torch thread per worker and no other thread's count
changed, the same vectors, a prompt stop on Ctrl-C."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from torch import nn

import pcctune.modeling.encoding as encoding
from pcctune.host_settings import cpu_speedups
from pcctune.modeling.build import build_model
from pcctune.modeling.cpu_workers import MAX_AUTO_WORKERS, cpu_workers, map_in_workers, stop_requested
from tests.conftest import SENTENCES


def test_results_come_in_order_from_one_thread_workers_and_the_caller_keeps_its_threads():
    torch.set_num_threads(2)
    seen: list[tuple[str, int, bool]] = []

    def work(item: int) -> int:
        time.sleep(0.01 * (item % 3))  # finishing out of order
        seen.append((threading.current_thread().name, torch.get_num_threads(), torch.is_inference_mode_enabled()))
        return item * item

    assert list(map_in_workers(work, range(12), workers=3)) == [i * i for i in range(12)]
    assert len({name for name, _, _ in seen}) > 1 and all(name != "MainThread" for name, _, _ in seen)
    assert all(threads == 1 and inference for _, threads, inference in seen)
    assert torch.get_num_threads() == 2


def test_one_worker_runs_in_the_calling_thread():
    names = list(map_in_workers(lambda _: threading.current_thread().name, range(3), workers=1))
    assert names == [threading.current_thread().name] * 3


def test_a_caller_that_stops_early_leaves_the_batches_not_begun_unrun():
    calls: list[int] = []

    def work(item: int) -> int:
        calls.append(item)
        time.sleep(0.05)
        return item

    results = map_in_workers(work, range(40), workers=2)
    assert next(results) == 0
    results.close()
    assert len(calls) < 10


def test_batches_finished_but_not_handed_out_when_the_caller_stops_are_kept():
    """A Ctrl-C while the caller waits for batch 0 must not lose the batches the other worker has finished."""
    kept: dict[int, int] = {}
    second_done = threading.Event()

    def work(item: int) -> int:
        if item == 0:
            second_done.wait(10)  # batch 0 ends only once the other worker has finished every other batch
            time.sleep(0.05)
        elif item == 5:
            second_done.set()
        return item * 10

    results = map_in_workers(work, range(6), workers=2, keep_finished=kept.__setitem__)
    assert next(results) == 0
    results.close()  # the caller stops (an interrupt, an error) before taking batches 1 to 5
    assert {item: kept[item] for item in range(1, 6)} == {item: item * 10 for item in range(1, 6)}


def test_workers_are_the_number_asked_or_torch_threads_up_to_a_cap(tiny_bert, monkeypatch):
    model = build_model(str(tiny_bert))
    torch.set_num_threads(2)
    assert cpu_workers(model, None) == 2
    assert cpu_workers(model, 3) == 3
    torch.set_num_threads(1)
    assert cpu_workers(model, None) == 1
    monkeypatch.setattr(torch, "get_num_threads", lambda: 96)
    assert cpu_workers(model, None) == MAX_AUTO_WORKERS
    assert cpu_workers(model, 12) == 12


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama"])
def test_encoding_in_workers_gives_the_vectors_of_one_thread(fixture, request):
    model = build_model(str(request.getfixturevalue(fixture)), template="eol" if fixture == "tiny_llama" else None)
    texts = [*SENTENCES, " ".join(SENTENCES), "a", *(f"{s} again" for s in SENTENCES)]
    with cpu_speedups(workers=1):
        one = encoding.encode_texts(model, texts, token_budget=32)
    with cpu_speedups(workers=3):
        three = encoding.encode_texts(model, texts, token_budget=32)
    np.testing.assert_allclose(three, one, atol=1e-6)


def test_a_thread_started_while_workers_run_gets_the_hosts_thread_count():
    torch.set_num_threads(2)
    seen: dict[str, int] = {}

    def work(item: int) -> int:
        seen.setdefault("worker", torch.get_num_threads())
        if item == 0:  # e.g. a server's request thread, started while pcctune encodes
            started = threading.Thread(target=lambda: seen.setdefault("started meanwhile", torch.get_num_threads()))
            started.start()
            started.join()
        return item

    assert list(map_in_workers(work, range(4), workers=2)) == [0, 1, 2, 3]
    assert seen == {"worker": 1, "started meanwhile": 2}
    assert torch.get_num_threads() == 2


class _Gate(nn.Module):
    """Waits inside its forward until the map is stopped (at most 30 s), as a long one-core layer would run on."""

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        deadline = time.monotonic() + 30
        while not stop_requested() and time.monotonic() < deadline:
            time.sleep(0.001)
        return inputs


class _Tail(nn.Module):
    """Counts the batches that got past the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.passed: list[int] = []

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        self.passed.append(int(inputs.item()))
        return inputs


def _interrupted_in_batch_one(model: nn.Module, began: list[int]) -> Callable[[int], torch.Tensor]:
    """A batch function: batch 0 raises KeyboardInterrupt (Ctrl-C, as the caller's thread sees it) once batch 1 is
    inside ``model``; the others run ``model``."""
    both_running = threading.Barrier(2, timeout=30)

    def work(item: int) -> torch.Tensor:
        if item == 0:
            both_running.wait()
            raise KeyboardInterrupt
        began.append(item)
        if item == 1:
            both_running.wait()
        return model(torch.tensor(float(item)))

    return work


def _threads_seen_later() -> list[int]:
    seen: list[int] = []
    later = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    later.start()
    later.join()
    return seen


def test_ctrl_c_drops_the_batches_not_begun_and_stops_the_running_ones_at_their_next_module():
    torch.set_num_threads(2)
    model, began = nn.Sequential(_Gate(), _Tail()), []
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        list(map_in_workers(_interrupted_in_batch_one(model, began), range(40), workers=2, stoppable=model))
    assert time.monotonic() - started < 20  # not the gate's 30 s: the running batch stopped at the next module
    assert model[1].passed == []
    assert 1 in began and set(began) <= {1, 2}  # batch 2 may have begun on the worker batch 0 left
    assert all(not module._forward_pre_hooks for module in model.modules())
    assert torch.get_num_threads() == 2 and _threads_seen_later() == [2]


def test_a_second_ctrl_c_while_the_running_batches_stop_leaves_nothing_to_restore(monkeypatch):
    torch.set_num_threads(2)
    shutdown = ThreadPoolExecutor.shutdown

    def interrupted(self: ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False) -> None:
        shutdown(self, wait=False, cancel_futures=cancel_futures)
        if wait:  # the second Ctrl-C, while the caller waits for the running batches to stop
            raise KeyboardInterrupt

    monkeypatch.setattr(ThreadPoolExecutor, "shutdown", interrupted)
    model, began = nn.Sequential(_Gate(), _Tail()), []
    with pytest.raises(KeyboardInterrupt):
        list(map_in_workers(_interrupted_in_batch_one(model, began), range(40), workers=2, stoppable=model))
    for thread in threading.enumerate():
        if thread.name.startswith("pcctune-encode"):
            thread.join(timeout=30)
    assert model[1].passed == []  # the workers stopped by themselves at the next module
    assert all(not module._forward_pre_hooks for module in model.modules())  # and the last took the hooks away
    assert torch.get_num_threads() == 2 and _threads_seen_later() == [2]
