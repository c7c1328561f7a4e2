"""glibc keeps freed activation memory for the next batch: no page faults once the first batch has run."""

from __future__ import annotations

import subprocess
import sys
from unittest import mock

import pytest

from pcctune.host_settings import SPEEDUPS_ENV, cpu_speedups
from pcctune.modeling.build import build_model
from pcctune.modeling.cpu_memory import has_glibc
from pcctune.modeling.encoding import encode_texts
from tests.conftest import SENTENCES

pytestmark = pytest.mark.skipif(not has_glibc(), reason="mallopt is glibc's")

BATCHES = """
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from pcctune.modeling.cpu_memory import keep_freed_memory
    assert keep_freed_memory()

def batches():  # what a forward pass does: a 12 MB activation, a second from it, both freed
    for _ in range(20):
        hidden = np.empty(3_000_000, dtype=np.float32)
        hidden.fill(1.0)
        out = hidden * 2
        del hidden, out

batches()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
batches()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _page_faults(setting: str) -> int:
    done = subprocess.run([sys.executable, "-c", BATCHES, setting], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


def test_freed_activations_are_reused_instead_of_faulted_in_again():
    kept, default = _page_faults("keep"), _page_faults("default")
    assert kept < 1_000  # ~115,000 pages are written in all
    assert default > 10 * max(kept, 100)


def test_encoding_on_cpu_sets_it_only_where_the_host_settings_ask(tiny_bert, monkeypatch):
    model = build_model(str(tiny_bert), device="cpu")
    monkeypatch.delenv(SPEEDUPS_ENV, raising=False)
    with mock.patch("pcctune.modeling.encoding.keep_freed_memory") as keep:
        encode_texts(model, SENTENCES[:3])  # the Python API's default
        keep.assert_not_called()
        with cpu_speedups():  # all three
            encode_texts(model, SENTENCES[:3])
        keep.assert_called_once_with()
        monkeypatch.setenv(SPEEDUPS_ENV, "1")
        encode_texts(model, SENTENCES[:3])
        assert keep.call_count == 2


THREAD_HEAP = """
import threading, sys
import numpy as np
from pcctune.modeling.cpu_memory import release_freed_memory

def resident_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20

def batches():  # a worker's batches: many mid-sized blocks from its own heap, all freed when it ends
    kept = [np.ones(25_000, dtype=np.float32) for _ in range(5_000)]  # 500 MB in 100 KB blocks
    del kept[:-1]  # the last stays, so its heap's top cannot shrink

worker = threading.Thread(target=batches)
worker.start(); worker.join()
before = resident_mb()
if sys.argv[1] == "release":
    release_freed_memory()
print(before, resident_mb())
"""


def _resident_after_a_worker(setting: str) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", THREAD_HEAP, setting], capture_output=True, text=True, check=True)
    before, after = (float(value) for value in done.stdout.split()[-2:])
    return before, after


def test_what_a_worker_thread_freed_is_handed_back_only_when_released():
    before, kept = _resident_after_a_worker("keep")
    assert before > 300 and kept > 300  # glibc keeps an ended thread's heap resident
    before, released = _resident_after_a_worker("release")
    assert before > 300 and released < before - 300


def test_encoding_in_workers_releases_their_heaps_unless_the_settings_keep_freed_memory(tiny_bert, monkeypatch):
    model = build_model(str(tiny_bert), device="cpu")
    monkeypatch.delenv(SPEEDUPS_ENV, raising=False)
    with mock.patch("pcctune.modeling.encoding.release_freed_memory") as release:
        encode_texts(model, SENTENCES[:3])  # the caller's thread alone
        release.assert_not_called()
        with cpu_speedups(workers=2), mock.patch("pcctune.modeling.encoding.keep_freed_memory"):
            encode_texts(model, SENTENCES[:3])  # the memory is to be kept
        release.assert_not_called()
        monkeypatch.setenv(SPEEDUPS_ENV, "workers")
        with mock.patch("pcctune.modeling.encoding.cpu_workers", return_value=2):
            encode_texts(model, SENTENCES[:3])
        release.assert_called_once_with()
