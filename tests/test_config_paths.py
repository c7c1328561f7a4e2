"""A run config reads the data files it names where it stands, whatever the working folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pcctune.errors import PcctuneError
from pcctune.results import RunResult
from pcctune.testing import SENTENCES
from pcctune.training.config import RunConfig, load_config
from pcctune.training.dev import stage_data_files
from tests.conftest import run_cli, write_csv


def _stage(**data) -> dict:
    return {"name": "pcc", "loss": "pearson", "data": {"source": "pairs", **data}, "batch_size": 4, "max_steps": 1}


def test_train_reads_a_pair_file_beside_its_config_from_another_working_folder(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys
):
    """``pcctune train sub/cfg.yaml`` with ``path: my.csv`` beside it; the file's columns are mapped by
    ``data.columns``; ``output_dir`` stays relative to the working folder."""
    sub = tmp_path / "sub"
    sub.mkdir()
    rows = [(SENTENCES[i % 12], SENTENCES[(i * 5 + 1) % 12], i % 5) for i in range(12)]
    write_csv(sub / "my.csv", rows, header=("sentence_1", "sentence_2", "gold"))
    columns = {"sentence1": "sentence_1", "sentence2": "sentence_2", "score": "gold"}
    config = {
        "model": str(tiny_bert),
        "data_dir": str(shared_senteval),
        "output_dir": "out",
        "evaluate_before": False,
        "tasks": "none",
        "stages": [_stage(path="my.csv", columns=columns, leakage="none") | {"dev": "none"}],
    }
    (sub / "cfg.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(["train", "sub/cfg.yaml"], capsys)
    assert code == 0, output
    record = RunResult.from_disk(tmp_path / "out" / "results.json")
    assert record.stages[0].train_examples == 12
    assert record.config["stages"][0]["data"]["path"] == str(sub / "my.csv")
    assert not (sub / "out").exists()


def test_dev_leakage_against_and_task_files_are_read_from_the_configs_folder(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    stage = _stage(path="my.csv", leakage_against=["held.csv"]) | {"dev": ["sick-trial", "mine.jsonl"]}
    raw = {"model": "models/mine", "output_dir": "runs/x", "tasks": "STS12,test.csv", "stages": [stage]}
    (sub / "cfg.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    config = load_config(sub / "cfg.yaml")
    data = config.stages[0].data
    assert data.path == str(sub / "my.csv")
    assert config.stages[0].dev == ["sick-trial", str(sub / "mine.jsonl")]
    assert config.tasks == ["STS12", str(sub / "test.csv")]
    assert set(data.leakage_against) == {str(sub / "held.csv"), str(sub / "test.csv")}
    assert (config.model, config.output_dir) == ("models/mine", "runs/x")
    kept = load_config(sub / "cfg.yaml", in_place=False)  # a run folder's own config.yaml
    assert kept.stages[0].data.path == "my.csv"


def test_a_config_given_as_a_mapping_reads_from_the_working_folder_and_names_the_path_tried(
    tmp_path, monkeypatch, shared_senteval
):
    monkeypatch.chdir(tmp_path)
    config = RunConfig.model_validate({"model": "m", "stages": [_stage(path="my.csv") | {"dev": "none"}]})
    assert config.stages[0].data.path == "my.csv"
    (tmp_path / "my.csv").write_text("sentence1,sentence2,score\n", encoding="utf-8")
    stage = RunConfig.model_validate(
        {"model": "m", "stages": [_stage(path="my.csv") | {"dev": ["elsewhere/dev.csv"]}]}
    ).stages[0]
    tried = re.escape(str(Path(tmp_path, "elsewhere", "dev.csv").resolve()))
    with pytest.raises(PcctuneError, match=f"dev reads {tried}, which is not a file"):
        stage_data_files(stage, shared_senteval)
