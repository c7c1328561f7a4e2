"""What Getting started promises about the demo: its time, given once from its record, and the checkpoint setting."""

from __future__ import annotations

import re
from pathlib import Path

from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.checkpoints import checkpoints
from pcctune.training.config import RunConfig
from tests.conftest import pairs_jsonl, tiny_run

ROOT = Path(__file__).parents[1]
GUIDE = ROOT / "docs" / "getting-started.md"
RECORD = ROOT / "benchmarks" / "results" / "speed" / "README.md"
SECONDS = re.compile(r"\b\d+(?:\.\d+)? ?s\b|\bminutes?\b")


def test_the_demos_time_is_given_once_as_its_record_holds_it():
    config = (ROOT / "configs" / "demo_minilm.yaml").read_text(encoding="utf-8")
    comments = "\n".join(line for line in config.splitlines() if line.lstrip().startswith("#"))
    assert not SECONDS.search(comments), "the config points to the guide for the demo's time"
    guide = GUIDE.read_text(encoding="utf-8")
    expect = guide.split("What to expect:", 1)[1].split("\n\n", 1)[0]
    (job,) = re.findall(r"(\d+\.\d) s\b", expect)  # one time, the whole job's
    row = next(line for line in RECORD.read_text(encoding="utf-8").splitlines() if "`pcctune train` (Pearson)" in line)
    assert row.split("|")[2].split()[0] == job  # the record's whole-job mean
    assert "AMD EPYC" in expect and "section 5 A" in expect


def test_save_total_limit_one_keeps_the_best_checkpoint_alone(tiny_bert, shared_senteval, tmp_path):
    assert "`save_total_limit: 1`" in GUIDE.read_text(encoding="utf-8")
    pairs = pairs_jsonl(tmp_path / "pairs.jsonl")
    config = tiny_run(tiny_bert, shared_senteval, pairs, tmp_path / "run", save_total_limit=1)
    record = run_pipeline(RunConfig.model_validate(config | {"tasks": "none"}))
    kept = checkpoints(tmp_path / "run" / "stage1-pcc" / "checkpoints")
    assert [str(path) for path in kept] == [record.stages[0].best_checkpoint]
