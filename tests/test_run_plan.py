"""``pcctune train CONFIG --check``: the run's checks and each stage's plan without training, writing or loading
weights; its counts are those the trainer then makes."""

from __future__ import annotations

import json

import pytest
from accelerate.data_loader import BatchSamplerShard
from datasets import Dataset
from rich.console import Console
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.sampler import DefaultBatchSampler
from transformers import PreTrainedModel

from pcctune.errors import PcctuneError
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.orchestration.run_plan import check_run
from pcctune.training.batching import steps_per_epoch
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.dev import dev_metric
from pcctune.training.sampling import SourceBatchSampler
from tests.conftest import assert_one_line_error, pairs_jsonl, run_cli, tiny_run, write_run_config

STAGES = {"epochs": {"epochs": 1.5}, "holdout": {"epochs": 1, "dev": "holdout"}}


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
    assert result.stages[0].start_dev_spearman is not None  # the start's evaluation, the plan's first
    assert plan.dev_evaluations == 1 + sum(dev_metric(config.stages[0].dev) in entry for entry in history)
    assert plan.dev_pairs > 0


def stage_of(**fields) -> StageConfig:
    return StageConfig.model_validate({"name": "s", "loss": "pearson", "data": {"source": "stage2"}} | fields)


def by_source(counts: tuple[int, ...]) -> Dataset:
    return Dataset.from_dict({"score": [[1.0, float(source)] for source, n in enumerate(counts) for _ in range(n)]})


def test_a_by_source_stage_counts_the_full_batches_of_each_source():
    """Six pairs of each of two sources in batches of 4: one full batch each, where 12 // 4 would say three."""
    stage, dataset = stage_of(group_by_source=True, batch_size=4), by_source((6, 6))
    assert steps_per_epoch(stage, dataset, world_size=1, seed=1) == 2
    assert len(list(SourceBatchSampler(dataset, 4, drop_last=True, seed=1))) == 2
    assert steps_per_epoch(stage.model_copy(update={"group_by_source": False}), dataset, 1, 1) == 3
    with pytest.raises(PcctuneError, match="give 0 full batch"):
        steps_per_epoch(stage, by_source((3, 3)), world_size=1, seed=1)


@pytest.mark.parametrize("world_size", [2, 3])
def test_each_process_counts_the_share_accelerate_gives_it(world_size):
    """sentence-transformers turns accelerate's even_batches off, and its samplers drop the last batch: each process
    trains the batches that divide evenly, no padded one."""
    dataset = Dataset.from_dict({"score": [0.5] * 52})
    stage = stage_of(batch_size=4 * world_size)
    sampler = DefaultBatchSampler(dataset, batch_size=4, drop_last=True)
    shard = BatchSamplerShard(sampler, num_processes=world_size, process_index=0, even_batches=False)
    assert steps_per_epoch(stage, dataset, world_size, seed=1) == len(shard) == len(list(shard))


def test_train_check_prints_the_plan_and_loads_and_writes_nothing(
    tiny_bert, shared_senteval, tmp_path, capsys, monkeypatch
):
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the check loaded a model")

    monkeypatch.setattr(SentenceTransformer, "__init__", refuse)
    monkeypatch.setattr(PreTrainedModel, "from_pretrained", refuse)
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    stage2 = {"data": {"source": "stage2", "leakage": "pair"}, "batch_size": 2}  # its leakage checks are cached
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", **stage2)
    code, printed = run_cli(["train", str(config), "--check", "--compare", "pearson,cosent"], capsys)
    assert code == 0, printed
    assert "pcc-pearson" in printed and "pcc-cosent" in printed and "checked for 1 process" in printed
    assert "pairs are test pairs" in printed  # each source's leakage audit line
    assert not (tmp_path / "run").exists()
    assert not [path for path in (tmp_path / "cache").rglob("*") if path.is_file()]  # no leakage check kept


def test_train_check_refuses_what_training_refuses(tiny_bert, shared_senteval, tmp_path, capsys):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", loss="pearsn")
    assert_one_line_error(*run_cli(["train", str(config), "--check"], capsys), "pearsn")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine", encoding="utf-8")
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "taken")
    assert_one_line_error(*run_cli(["train", str(config), "--check"], capsys), "holds other files")
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "fresh")
    args = ["train", str(config), "--check", "--resume-from", str(tmp_path)]
    assert_one_line_error(*run_cli(args, capsys), "is not a trainer checkpoint")
