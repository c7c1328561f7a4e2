"""A program that imports pcctune finds its process as it left it: after ``pcctune.evaluate`` and the evaluators, and
during them in a thread it starts meanwhile, torch's thread count, the model's classes and modes are its own, and
glibc's allocator settings are untouched unless it asks for them (``pcctune.cpu_speedups``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
import torch

import pcctune
import pcctune.modeling.encoding as encoding
from pcctune.cli import process as cli
from pcctune.errors import PcctuneError
from pcctune.host_settings import (
    LIBRARY_DEFAULT,
    SPEEDUPS,
    SPEEDUPS_ENV,
    HostSettings,
    command_line_choice,
    from_environment,
    host_settings,
)
from pcctune.modeling import cpu_memory


@pytest.fixture
def mallopt(monkeypatch) -> Iterator[mock.Mock]:
    """glibc's ``mallopt`` as pcctune calls it, recorded instead of called (the once-per-process memo cleared)."""
    monkeypatch.delenv(SPEEDUPS_ENV, raising=False)
    cpu_memory.keep_freed_memory.cache_clear()
    spy = mock.Mock(return_value=True)
    monkeypatch.setattr(cpu_memory, "_mallopt", spy)
    monkeypatch.setattr(cpu_memory, "has_glibc", lambda: True)
    yield spy
    cpu_memory.keep_freed_memory.cache_clear()


def _the_hosts_view(model: Any) -> tuple[list[bool], list[type]]:
    return [m.training for m in model.modules()], [type(m) for m in model.modules()]


def test_evaluating_leaves_the_host_process_as_it_was(tiny_bert, shared_senteval, mallopt, monkeypatch):
    torch.set_num_threads(2)
    model = pcctune.build_model(str(tiny_bert), device="cpu").train()  # e.g. a model the program is training
    model[0].auto_model.embeddings.eval()
    before = _the_hosts_view(model)
    started_meanwhile: list[int] = []
    real = encoding._encode_batch

    def batch(*args: Any) -> Any:  # a thread the program starts while pcctune encodes (a server's request)
        thread = threading.Thread(target=lambda: started_meanwhile.append(torch.get_num_threads()))
        thread.start()
        thread.join()
        return real(*args)

    monkeypatch.setattr(encoding, "_encode_batch", batch)
    pcctune.evaluate(model, data=shared_senteval)
    pcctune.evaluate(model, data=shared_senteval, workers=2)
    pcctune.DevSTSEvaluator.named("sick-trial", shared_senteval)(model)
    pcctune.PccEvaluator(shared_senteval)(model)
    assert started_meanwhile and set(started_meanwhile) == {2}
    assert _the_hosts_view(model) == before
    mallopt.assert_not_called()
    assert torch.get_num_threads() == 2
    with pcctune.cpu_speedups():  # all three: the allocator is set, the model restored
        pcctune.evaluate(model, data=shared_senteval)
    assert mallopt.call_count == 2
    assert _the_hosts_view(model) == before
    assert set(started_meanwhile) == {2}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", "default"),
        ("0", LIBRARY_DEFAULT),
        ("1", SPEEDUPS),
        ("all", SPEEDUPS),
        ("workers,onednn", HostSettings(workers=None, onednn=True, keep_freed_memory=False)),
        (" keep_freed_memory ", HostSettings(workers=1, onednn=False, keep_freed_memory=True)),
    ],
)
def test_the_environment_names_the_speed_settings(monkeypatch, value, expected):
    default = HostSettings(workers=3, onednn=False, keep_freed_memory=False)  # neither of the named sets
    monkeypatch.setenv(SPEEDUPS_ENV, value)
    assert from_environment(default) == (default if expected == "default" else expected)


def test_an_unknown_speed_setting_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(SPEEDUPS_ENV, "workers,turbo")
    with pytest.raises(PcctuneError, match="no setting turbo"):
        from_environment(SPEEDUPS)


def test_the_command_line_takes_the_environments_choice(monkeypatch):
    seen: list[HostSettings] = []
    monkeypatch.setattr(cli, "app", lambda **kwargs: seen.append(host_settings()) or 0)
    monkeypatch.setenv(SPEEDUPS_ENV, "onednn")
    cli._app(["eval"])
    monkeypatch.delenv(SPEEDUPS_ENV)
    cli._app(["eval"])
    assert seen == [HostSettings(workers=1, onednn=True, keep_freed_memory=False), command_line_choice().settings]


def _draw() -> tuple[float, float, float]:
    """One number from each global generator: Python's, NumPy's and torch's."""
    import random

    import numpy as np

    return random.random(), float(np.random.rand()), torch.rand(1).item()


def _seed_all(seed: int) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def test_seeded_work_leaves_the_callers_random_streams_as_they_were():
    from pcctune.seeding import seeded

    _seed_all(7)
    expected = _draw()
    _seed_all(3)
    seeded_draw = _draw()
    _seed_all(7)
    with seeded(3):
        assert _draw() == seeded_draw  # inside: every generator seeded by 3
    assert _draw() == expected  # after: the caller's streams go on as if nothing had drawn


@pytest.mark.parametrize("entry", ["pcctune.train", "run_pipeline"])
def test_training_through_the_api_leaves_the_callers_random_streams_as_they_were(
    entry, tiny_bert, shared_senteval, tmp_path
):
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import load_config
    from tests.conftest import write_run_config

    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", max_steps=2)
    _seed_all(11)
    expected = _draw()
    _seed_all(11)
    if entry == "pcctune.train":
        pcctune.train(config)  # seeds every generator with its own seed while it runs
    else:
        run_pipeline(load_config(config))
    assert _draw() == expected


def test_training_a_preference_model_leaves_the_callers_random_streams_as_they_were(tiny_bert, tmp_path):
    from pcctune.data.sts import STSPair
    from pcctune.training.preference import train_preference_model
    from tests.conftest import SENTENCES

    pairs = [STSPair(SENTENCES[i], SENTENCES[(i + 1) % 12], float(i % 5)) for i in range(8)]
    _seed_all(5)
    expected = _draw()
    _seed_all(5)
    train_preference_model(str(tiny_bert), pairs, tmp_path / "scorer", epochs=1, batch_size=4, seed=0)
    assert _draw() == expected


def test_a_stage_puts_transformers_log_level_back():
    """A trainer sets transformers' log level on every process but the first; the stage puts the caller's back."""
    import transformers

    from pcctune.training.stage import log_level_kept

    before = transformers.logging.get_verbosity()
    with log_level_kept():
        transformers.logging.set_verbosity(transformers.logging.ERROR if before != transformers.logging.ERROR else 10)
    assert transformers.logging.get_verbosity() == before


def test_drawing_a_plot_leaves_the_hosts_matplotlib_as_it_was(tmp_path):
    """A notebook's backend and open figures survive pcctune's plots: it draws outside pyplot (in a process of its
    own here, as the backend is process-wide)."""
    import subprocess
    import sys

    png = str(tmp_path / "curves.png")
    script = f"""
from pathlib import Path
import matplotlib
matplotlib.use("pdf")  # the host's choice, e.g. a notebook's inline backend
import matplotlib.pyplot as plt
plt.figure()
from pcctune.training.plots import plot_training
metric = "eval_dev_spearman_cosine"
plot_training([{{"step": 2, "loss": 0.5}}, {{"step": 2, metric: 0.8}}], metric, "t", Path({png!r}))
print(matplotlib.get_backend(), plt.get_fignums())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "pdf [1]" and (tmp_path / "curves.png").stat().st_size > 1000
