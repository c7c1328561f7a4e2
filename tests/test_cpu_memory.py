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
