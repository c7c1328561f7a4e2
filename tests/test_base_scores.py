"""The base model's test scores are kept between runs: a second run that scores the same base model the same way
reads them from the cache; another model file, template, seed or test set is scored afresh."""

from __future__ import annotations

import shutil

import pytest

from pcctune.orchestration import pipeline
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.config import RunConfig
from tests.conftest import one_step_stage2


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """A private cache, and the number of test evaluations the pipeline runs."""
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    calls = []
    real = pipeline.evaluate_sts

    def evaluate_sts(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "evaluate_sts", evaluate_sts)
    return calls


def run(model, senteval, out, **settings):
    payload = {"model": str(model), "data_dir": str(senteval), "output_dir": str(out), "evaluate_before": True}
    return run_pipeline(RunConfig.model_validate(payload | settings | {"stages": [one_step_stage2()]}))


def test_a_second_run_reads_the_base_models_scores_and_another_setting_scores_again(
    counted, tiny_bert, mini_senteval, tmp_path
):
    first = run(tiny_bert, mini_senteval, tmp_path / "a")
    assert len(counted) == 2 and "before" in first.eval_wall_time_s  # before and after training
    second = run(tiny_bert, mini_senteval, tmp_path / "b")
    assert len(counted) == 3 and second.sts_by_stage["before"] == first.sts_by_stage["before"]
    assert "before" not in second.eval_wall_time_s  # nothing encoded: read from the cache
    run(tiny_bert, mini_senteval, tmp_path / "c", template="This sentence : {text}")
    assert len(counted) == 5
    run(tiny_bert, mini_senteval, tmp_path / "d", seed=7)
    assert len(counted) == 7


def test_a_changed_model_folder_is_scored_again(counted, tiny_bert, mini_senteval, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    run(model, mini_senteval, tmp_path / "a")
    (model / "config.json").write_text((model / "config.json").read_text() + "\n")  # the folder changed
    run(model, mini_senteval, tmp_path / "b")
    assert len(counted) == 4


def test_other_test_pairs_are_scored_again(counted, tiny_bert, mini_senteval, tmp_path):
    from pcctune.evaluation.protocols import load_protocol_tasks

    tasks = load_protocol_tasks(mini_senteval, "simcse-senteval")
    config = {"model": str(tiny_bert), "data_dir": str(mini_senteval), "evaluate_before": True}
    for out, chosen in (("a", tasks), ("b", tasks[:3])):
        payload = config | {"output_dir": str(tmp_path / out), "stages": [one_step_stage2()]}
        run_pipeline(RunConfig.model_validate(payload), tasks=chosen)
    assert len(counted) == 4
