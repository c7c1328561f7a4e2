"""Transfer tasks: readers, splits, probe, and the pcctune eval --tasks transfer record."""

from __future__ import annotations

import numpy as np
import pytest

from pcctune.data.transfer import TRANSFER_TASKS, load_transfer_task
from pcctune.errors import PcctuneError
from pcctune.evaluation.transfer import cross_validated_accuracy, score_transfer_task
from pcctune.orchestration.evaluate import run_eval


def test_readers_and_splits(mini_transfer):
    tasks = {name: load_transfer_task(mini_transfer, name) for name in TRANSFER_TASKS}
    assert set(tasks["MR"].splits) == {"all"} and tasks["MR"].splits["all"][1].count(1) == 20
    assert set(tasks["SST2"].splits) == {"train", "dev", "test"}
    assert tasks["SST2"].splits["train"][0][0] == "a good red car number 0 ."
    trec_labels = tasks["TREC"].splits["train"][1] + tasks["TREC"].splits["test"][1]
    assert sorted(set(trec_labels)) == [0, 1]  # coarse classes: DESC:manner and DESC:def are one class
    assert isinstance(tasks["MRPC"].splits["train"][0][0], tuple)


def test_unknown_task_and_bad_line(mini_transfer):
    with pytest.raises(PcctuneError, match="unknown transfer task"):
        load_transfer_task(mini_transfer, "SST5")
    (mini_transfer / "downstream" / "SST" / "binary" / "sentiment-dev").write_text("no label here\n")
    with pytest.raises(PcctuneError, match="expected a 0/1 label"):
        load_transfer_task(mini_transfer, "SST2")


def test_probe_learns_separable_features_and_not_noise():
    rng = np.random.default_rng(0)
    labels = np.array([0, 1] * 50)
    separable = rng.normal(size=(100, 5)) + labels[:, None] * 4
    assert cross_validated_accuracy(separable, labels, seed=1) == pytest.approx(1.0)
    noise = rng.normal(size=(100, 5))
    assert cross_validated_accuracy(noise, labels, seed=1) < 0.75


def test_mrpc_uses_u_v_absdiff_product(mini_transfer):
    task = load_transfer_task(mini_transfer, "MRPC")
    vectors = {}
    for pairs, _ in task.splits.values():
        for a, b in pairs:
            vectors[a] = np.ones(3) if "good" in a else np.zeros(3)
            vectors[b] = np.ones(3) if "good" in b else -np.ones(3)
    score = score_transfer_task(task, vectors)
    assert score.accuracy == pytest.approx(100.0) and score.f1 == pytest.approx(100.0)


def test_eval_transfer_record(mini_transfer, tiny_bert):
    record = run_eval(str(tiny_bert), mini_transfer, tasks="all")
    assert set(record.transfer) == {*TRANSFER_TASKS, "avg"}
    assert record.sts is not None and all(0 <= v <= 100 for v in record.transfer.values())
    assert any("MRPC" in path for path in record.data_files_sha256)
