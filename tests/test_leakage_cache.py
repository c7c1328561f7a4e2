"""The leakage checks of the stage-2 set are kept in pcctune's cache: a later build reads them, the same report."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import pcctune.data.stage2 as stage2
from pcctune.data.leakage import TestIndex
from pcctune.data.leakage_cache import CHECKS_FILE, KIND


@pytest.fixture()
def counted(monkeypatch, tmp_path) -> list[int]:
    """A fresh cache, no set built in this process, and every ``TestIndex`` built (the expensive path) counted."""
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    stage2._build.cache_clear()
    built: list[int] = []
    real = TestIndex.__init__

    def counting(self, *args, **kwargs) -> None:
        built.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(TestIndex, "__init__", counting)
    return built


def _report(senteval: Path) -> dict:
    stage2._build.cache_clear()  # as a new process would: nothing kept in memory
    return stage2.build_stage2_set(senteval, rescale_sick=True).report_dict()


def test_a_second_build_reads_the_checks_from_the_cache_and_reports_the_same(mini_senteval, counted):
    first = _report(mini_senteval)
    assert len(counted) == 1
    assert _report(mini_senteval) == first
    assert len(counted) == 1  # no test index built, no pair checked again


def test_a_changed_test_file_checks_again(mini_senteval, counted, monkeypatch, tmp_path):
    first = _report(mini_senteval)
    sick_test = mini_senteval / "downstream" / "SICK" / "SICK_test_annotated.txt"
    lines = sick_test.read_text(encoding="utf-8").splitlines()
    sick_test.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # the pair SICK train shares with it
    changed = _report(mini_senteval)
    assert len(counted) == 2 and changed != first
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "empty-cache"))
    assert _report(mini_senteval) == changed  # what checking from scratch gives


def test_another_near_threshold_is_checked_on_its_own(mini_senteval, counted):
    stage2.build_stage2_set(mini_senteval, near_threshold=0.8)
    stage2.build_stage2_set(mini_senteval, near_threshold=0.6)
    assert len(counted) == 2


def test_a_damaged_entry_is_set_aside_and_checked_again(mini_senteval, counted, tmp_path):
    first = _report(mini_senteval)
    entry = next((tmp_path / "cache" / KIND).glob("STSBenchmark_train-*"))
    (entry / CHECKS_FILE).write_text("[]", encoding="utf-8")
    assert _report(mini_senteval) == first
    assert len(counted) == 2


def test_a_cold_check_leaves_the_callers_random_sequence_as_a_warm_one_does(mini_senteval, counted):
    random.seed(0)
    untouched = random.random()
    draws = []
    for _ in range(2):  # a cold miss, then a warm hit
        random.seed(0)
        _report(mini_senteval)
        draws.append(random.random())
    assert len(counted) == 1
    assert draws == [untouched, untouched]


def test_every_built_in_dev_set_is_checked_under_the_name_the_stage2_report_uses(mini_senteval):
    """A stage's audit and the stage-2 set's report then share the dev sets' cache entries: each name stands for
    the same pairs."""
    from pcctune.data.dev import SINGLE_DEV_SETS

    assert set(stage2.DEV_SOURCES) == set(SINGLE_DEV_SETS)
    for name, source in stage2.DEV_SOURCES.items():
        assert stage2.source_pairs(mini_senteval, source) == SINGLE_DEV_SETS[name](mini_senteval).pairs


def test_a_build_in_a_run_that_stops_keeps_nothing_and_a_build_on_its_own_keeps_its_checks(
    mini_senteval, counted, tmp_path
):
    """Inside a run (a ``waiting_checks`` scope) the set's checks wait for the run to end well: a run refused on bad
    input after building the set leaves no cache entry. Built on its own, the set keeps them at once."""
    from pcctune.data.audit import waiting_checks

    entries = tmp_path / "cache" / KIND
    with waiting_checks():  # left without keep(): the run was refused
        stage2.build_stage2_set(mini_senteval)
    assert not list(entries.glob(f"*/{CHECKS_FILE}"))
    _report(mini_senteval)
    assert len(list(entries.glob(f"*/{CHECKS_FILE}"))) == len(stage2.TRAIN_SOURCES) + len(stage2.DEV_SOURCES)
    assert len(counted) == 2
