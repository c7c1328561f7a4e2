"""Inference batches side by side on CPU: results in order, one torch thread per worker, the same vectors."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

import pcctune.modeling.encoding as encoding
from pcctune.modeling.build import build_model
from pcctune.modeling.cpu_workers import cpu_workers, map_in_workers
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


def test_workers_follow_torch_threads_on_cpu(tiny_bert):
    model = build_model(str(tiny_bert))
    torch.set_num_threads(2)
    assert cpu_workers(model) == 2
    torch.set_num_threads(1)
    assert cpu_workers(model) == 1


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama"])
def test_encoding_in_workers_gives_the_vectors_of_one_thread(fixture, request, monkeypatch):
    model = build_model(str(request.getfixturevalue(fixture)), template="eol" if fixture == "tiny_llama" else None)
    texts = [*SENTENCES, " ".join(SENTENCES), "a", *(f"{s} again" for s in SENTENCES)]
    monkeypatch.setattr(encoding, "cpu_workers", lambda _: 1)
    one = encoding.encode_texts(model, texts, token_budget=32)
    monkeypatch.setattr(encoding, "cpu_workers", lambda _: 3)
    three = encoding.encode_texts(model, texts, token_budget=32)
    np.testing.assert_allclose(three, one, atol=1e-6)
