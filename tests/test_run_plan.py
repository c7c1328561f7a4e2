"""``pcctune train CONFIG --check``: the run's checks and each stage's plan without training, writing or loading
weights; its counts are those the trainer then makes."""

from __future__ import annotations

import json

import pytest
from datasets import Dataset
from rich.console import Console

import pcctune.orchestration.pipeline as pipeline_module
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.orchestration.run_plan import batches_per_epoch, check_run
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.dev import dev_metric
from pcctune.training.sampling import SourceBatchSampler
from tests.conftest import assert_one_line_error, pairs_jsonl, run_cli, tiny_run, write_run_config

STAGES = {
    "epochs": {"epochs": 1.5},
    "holdout": {"epochs": 1, "dev": "holdout"},
}


@pytest.mark.parametrize("stage", STAGES.values(), ids=STAGES.keys())
def test_the_check_counts_what_training_then_trains(tiny_bert, shared_senteval, tmp_path, stage):
    """Examples (less a held-out dev share), optimizer steps (full batches) and dev evaluations (the start, one every
    eval_steps and the last step), each equal to the trained stage's."""
    pairs = pairs_jsonl(tmp_path / "pairs.jsonl", count=52)
    config = RunConfig.model_validate(
        tiny_run(tiny_bert, shared_senteval, pairs, tmp_path / "run", max_steps=-1, **stage)
    )
    [plan] = check_run(config)
    assert not (tmp_path / "run").exists()
    result = run_pipeline(config, console=Console(quiet=True))
    history = json.loads((tmp_path / "run" / "stage1-pcc" / "log_history.json").read_text(encoding="utf-8"))
    assert plan.examples == result.stages[0].train_examples
    assert plan.steps == max(entry["step"] for entry in history)
    assert plan.dev_evaluations == 1 + sum(dev_metric(config.stages[0].dev) in entry for entry in history)
    assert plan.dev_pairs > 0


def test_a_by_source_stage_counts_the_full_batches_of_each_source():
    """Six pairs of each of two sources in batches of 4: one full batch each, where 12 // 4 would say three."""
    stage = StageConfig.model_validate(
        {"name": "s", "loss": "pearson", "data": {"source": "stage2"}, "group_by_source": True, "batch_size": 4}
    )
    dataset = Dataset.from_dict({"score": [[1.0, float(source)] for source in (0, 1) for _ in range(6)]})
    assert batches_per_epoch(stage, dataset, world_size=1, seed=1) == 2
    assert len(list(SourceBatchSampler(dataset, 4, drop_last=True, seed=1))) == 2
    assert batches_per_epoch(stage.model_copy(update={"group_by_source": False}), dataset, 1, 1) == 3


def test_train_check_prints_the_plan_and_loads_and_writes_nothing(
    tiny_bert, shared_senteval, tmp_path, capsys, monkeypatch
):
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the check loaded the model")

    monkeypatch.setattr(pipeline_module, "build_model", refuse)
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    code, printed = run_cli(["train", str(config), "--check", "--compare", "pearson,cosent"], capsys)
    assert code == 0, printed
    assert "pcc-pearson" in printed and "pcc-cosent" in printed and "checked: nothing was trained" in printed
    assert not (tmp_path / "run").exists()


def test_train_check_refuses_what_training_refuses(tiny_bert, shared_senteval, tmp_path, capsys):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", loss="pearsn")
    assert_one_line_error(*run_cli(["train", str(config), "--check"], capsys), "pearsn")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine", encoding="utf-8")
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "taken")
    assert_one_line_error(*run_cli(["train", str(config), "--check"], capsys), "holds other files")
