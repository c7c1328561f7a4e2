"""A dev evaluation inside a training run scores the weights the model holds at that step: each in-run dev score
equals a fresh evaluation of the checkpoint saved at the same step, in another model object, and a run interrupted
between two dev evaluations resumes to the uninterrupted run's dev curve and weights, bit for bit."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from transformers import TrainerCallback

import pcctune
import pcctune.orchestration.pipeline as pipeline
from pcctune.modeling.build import build_model
from pcctune.training.dev import DevSTSEvaluator
from tests.conftest import pairs_jsonl, run_cli, tiny_run, write_run_config


@pytest.mark.parametrize("threads", [1, 2])
def test_each_in_run_dev_score_equals_a_fresh_evaluation_of_its_checkpoint(
    threads, tiny_bert, shared_senteval, tmp_path
):
    config = tiny_run(tiny_bert, shared_senteval, pairs_jsonl(tmp_path / "pairs.jsonl"), tmp_path / "run")
    config["stages"][0] |= {"max_steps": 6, "eval_steps": 2, "save_total_limit": None}
    config["onednn"] = True
    with pcctune.cpu_speedups(workers=threads):  # as `pcctune train` encodes its dev sets
        pcctune.train(pcctune.RunConfig.model_validate(config), overwrite=True)
    state = json.loads(next((tmp_path / "run").rglob("checkpoint-6/trainer_state.json")).read_text())
    metric = "sick-trial_pearson_cosine"  # the tiny dev set's ranks barely move; its Pearson moves every step
    in_run = {entry["step"]: entry[f"eval_{metric}"] for entry in state["log_history"] if f"eval_{metric}" in entry}
    assert sorted(in_run) == [2, 4, 6]
    evaluator = DevSTSEvaluator.named("sick-trial", shared_senteval)
    for step, score in in_run.items():
        checkpoint = next((tmp_path / "run").rglob(f"checkpoint-{step}"))
        fresh = evaluator(build_model(str(checkpoint), device="cpu"))[metric]
        assert score == pytest.approx(fresh, abs=1e-6), step


def _dev_curve(run: Path) -> dict[int, float]:
    """Every in-run dev score of a finished run's last checkpoint's history, by step."""
    state = json.loads(max(run.rglob("checkpoint-*/trainer_state.json"), key=lambda p: p.stat().st_mtime).read_text())
    metric = "eval_sick-trial_pearson_cosine"
    return {entry["step"]: entry[metric] for entry in state["log_history"] if metric in entry}


def _weights(run: Path) -> bytes:
    return next(run.rglob("final/model.safetensors")).read_bytes()


def test_a_run_interrupted_between_dev_evaluations_resumes_to_the_same_dev_curve_and_weights(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys
):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a shell, even when started with &
    try:
        whole = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "whole", max_steps=8)
        assert run_cli(["train", str(whole)], capsys)[0] == 0
        config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "cut", max_steps=8)
        with monkeypatch.context() as patch:
            real = pipeline.run_stage
            patch.setattr(pipeline, "run_stage", lambda *a, **k: real(*a, **{**k, "callbacks": [SigintAfter(5)]}))
            assert run_cli(["train", str(config)], capsys)[0] == 130
        assert run_cli(["train", str(config), "--resume"], capsys)[0] == 0
    finally:
        signal.signal(signal.SIGINT, previous)
    expected = _dev_curve(tmp_path / "whole")
    assert sorted(expected) == [2, 4, 6, 8] and len(set(expected.values())) == 4  # the curve moves
    assert _dev_curve(tmp_path / "cut") == expected  # bit for bit: the resumed evaluations see the same weights
    assert _weights(tmp_path / "cut") == _weights(tmp_path / "whole")


class SigintAfter(TrainerCallback):
    """A real SIGINT (what Ctrl-C sends) after step ``step``."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            os.kill(os.getpid(), signal.SIGINT)
