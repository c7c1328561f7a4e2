"""A stage scores the model it starts from on its dev set: the run says when no checkpoint beat it."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from rich.console import Console
from sentence_transformers import SentenceTransformer

from pcctune.data.senteval import load_sick
from pcctune.modeling.build import build_model
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.results import RunResult
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.dev import DevSTSEvaluator
from pcctune.training.start import start_key
from tests.conftest import tiny_run


def _against_dev(folder, senteval):
    """SICK trial's pairs with their scores turned around (6 − score), eight times over: Pearson training on them
    pulls the dev score down."""
    trial = load_sick(senteval, "dev").pairs
    rows = [{"sentence1": p.sentence1, "sentence2": p.sentence2, "score": 6 - p.score} for p in trial] * 8
    path = folder / "against.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    return path


def _lowering_run(model, senteval, folder, **stage) -> tuple[RunResult, str]:
    config = RunConfig.model_validate(
        tiny_run(model, senteval, _against_dev(folder, senteval), folder / "run", max_steps=12, **stage)
        | {"tasks": ["STS12"]}
    )
    out = io.StringIO()
    record = run_pipeline(config, console=Console(file=out, width=400))
    return record, out.getvalue()


@pytest.fixture(scope="module")
def lowered(tiny_bert, shared_senteval, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lowered")
    return (*_lowering_run(tiny_bert, shared_senteval, folder), folder / "run")


def test_a_run_whose_training_lowered_the_dev_score_says_the_start_scored_higher(lowered):
    record, printed, _ = lowered
    stage = record.stages[0]
    assert stage.start_dev_spearman is not None and stage.best_dev_spearman is not None
    assert stage.best_dev_spearman < stage.start_dev_spearman
    assert f"(start {stage.start_dev_spearman * 100:.2f})" in printed
    assert "no checkpoint beat the starting model on dev" in printed
    assert "final is that checkpoint all the same (keep_start_if_best: true" in printed
    assert stage.best_checkpoint is not None and stage.best_checkpoint.endswith(("checkpoint-2", "checkpoint-4"))
    assert stage.best_at_last_evaluation is False and "its last dev evaluation" not in printed  # 12 steps ran


def test_the_record_and_the_card_hold_both_scores(lowered):
    record, _, run = lowered
    saved = RunResult.from_disk(run / "results.json").stages[0]
    assert saved.start_dev_spearman == record.stages[0].start_dev_spearman
    assert saved.best_dev_spearman == record.stages[0].best_dev_spearman
    card = (run / "stage1-pcc" / "final" / "README.md").read_text(encoding="utf-8")
    assert "start dev (Spearman × 100)" in card and "best dev (Spearman × 100)" in card
    assert f"{saved.start_dev_spearman * 100:.2f}" in card and f"{saved.best_dev_spearman * 100:.2f}" in card
    assert "no checkpoint scored above the model it started from" in card


def test_keep_start_if_best_saves_the_starting_model_as_final(tiny_bert, shared_senteval, tmp_path):
    record, printed = _lowering_run(tiny_bert, shared_senteval, tmp_path, keep_start_if_best=True)
    assert "final is the starting model (keep_start_if_best)" in printed
    assert record.stages[0].best_checkpoint is not None  # the best checkpoint keeps its meaning
    sentences = ["a man plays a guitar", "a woman slices an onion"]
    final = SentenceTransformer(str(tmp_path / "run" / "stage1-pcc" / "final")).encode(sentences)
    np.testing.assert_allclose(final, build_model(str(tiny_bert)).encode(sentences), atol=1e-6)


def test_the_start_score_key_changes_with_the_model_the_dev_pairs_and_the_input_lengths(tiny_bert, shared_senteval):
    model = build_model(str(tiny_bert))
    run = RunConfig.model_validate(tiny_run(tiny_bert, shared_senteval, tiny_bert / "p.jsonl", tiny_bert / "o"))
    stage = run.stages[0]
    parts = {"sick-trial": load_sick(shared_senteval, "dev").pairs}
    evaluator = DevSTSEvaluator(parts, "sick-trial")
    key = start_key(model, stage, run, evaluator)
    assert key is not None and start_key(model, stage, run, evaluator) == key
    fewer = DevSTSEvaluator({"sick-trial": parts["sick-trial"][:-1]}, "sick-trial")
    shorter = StageConfig.model_validate({**stage.model_dump(), "max_seq_length": 8})
    assert start_key(model, stage, run, fewer) != key
    assert start_key(model, shorter, run, evaluator) != key
    next(model.parameters()).data.add_(1e-3)
    assert start_key(model, stage, run, evaluator) != key


def test_scoring_the_start_draws_nothing_at_random_so_training_is_unchanged(
    tiny_bert, shared_senteval, tmp_path, monkeypatch
):
    """The start is scored after the trainer seeded the random generators and before the first step: a draw there
    would move every dropout mask and batch order after it. The trained model is the same with the start scored and
    without."""
    import pcctune.training.stage as stage_module

    (tmp_path / "scored").mkdir()
    (tmp_path / "unscored").mkdir()
    first, _ = _lowering_run(tiny_bert, shared_senteval, tmp_path / "scored")
    monkeypatch.setattr(stage_module, "start_score", lambda model, evaluator, key: 0.0)
    second, _ = _lowering_run(tiny_bert, shared_senteval, tmp_path / "unscored")
    assert second.stages[0].start_dev_spearman == 0.0  # the stand-in ran: the start was not scored
    sentences = ["A man plays a guitar.", "Two dogs run on the grass."]
    trained = [SentenceTransformer(str(record.stages[0].final_dir)).encode(sentences) for record in (first, second)]
    np.testing.assert_array_equal(trained[0], trained[1])


def test_a_best_checkpoint_at_the_last_dev_evaluation_says_the_score_may_still_be_rising():
    from dataclasses import replace
    from pathlib import Path

    from pcctune.orchestration.pipeline import dev_line
    from pcctune.training.stage import StageResult
    from pcctune.training.stage_cost import StageCost

    result = StageResult(
        StageCost(), "rss", "pcc", 64, Path("final"), "run/checkpoints/checkpoint-12", 0.8, [], Path("p"), 0.7, True
    )
    line = dev_line(result, keep_start=False)
    assert line.startswith("best dev 80.00 (Spearman × 100) at run/checkpoints/checkpoint-12, its last dev evaluation")
    assert "may still have been rising" in line and line.endswith("(start 70.00)")
    assert "its last dev evaluation" not in dev_line(replace(result, best_at_last_evaluation=False), keep_start=False)
