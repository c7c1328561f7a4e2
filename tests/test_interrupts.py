"""One SIGINT or SIGTERM at any moment of ``pcctune train`` ends with 130 / 143, a line that says what was kept
and how to continue, and a folder that ``--resume`` finishes."""

from __future__ import annotations

import json
import logging
import os
import signal

import pytest
from transformers import TrainerCallback

import pcctune.orchestration.pipeline as pipeline
import pcctune.training.stage as stage_module
from pcctune.training.trainer import PcctuneTrainer
from tests.conftest import count_encoded_batches, run_cli, write_run_config

EVENTS = ["on_train_begin", "on_step_begin", "on_step_end", "on_log", "on_evaluate", "on_save", "on_train_end"]


@pytest.fixture(autouse=True)
def signals_not_ignored():
    """A process started in the background inherits SIGINT ignored; these tests need it delivered."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def signal_on(event: str, signum: int) -> TrainerCallback:
    """A callback that sends this process ``signum`` the first time ``event`` fires."""
    sent: list[bool] = []

    def fire(self, args, state, control, **kwargs):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signum)

    return type(f"Signal_{event}", (TrainerCallback,), {event: fire})()


def _train(config, capsys, monkeypatch, callback=None):
    if callback is not None:
        real = pipeline.run_stage
        monkeypatch.setattr(pipeline, "run_stage", lambda *a, **k: real(*a, **{**k, "callbacks": [callback]}))
    return run_cli(["train", str(config)], capsys)


@pytest.mark.parametrize("event", EVENTS)
def test_sigint_at_each_trainer_event_exits_130_with_the_resume_command(
    event, tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys
):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    code, output = _train(config, capsys, monkeypatch, signal_on(event, signal.SIGINT))
    assert code == 130, output
    assert "Traceback" not in output and f"pcctune train {config} --resume" in output
    assert not (tmp_path / "run" / "results.json").exists()


@pytest.mark.parametrize("where", ["checkpoint", "final save"])
def test_a_signal_inside_a_save_is_honest_and_resumable(
    where, tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys
):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    if where == "checkpoint":
        real_save = PcctuneTrainer._save_checkpoint

        def interrupted_save(self, *args, **kwargs):
            real_save(self, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)

        monkeypatch.setattr(PcctuneTrainer, "_save_checkpoint", interrupted_save)
    else:
        real_final = stage_module.save_model

        def interrupted_final(model, folder):
            os.kill(os.getpid(), signal.SIGTERM)
            return real_final(model, folder)

        monkeypatch.setattr(stage_module, "save_model", interrupted_final)
    code, output = run_cli(["train", str(config)], capsys)
    assert code == 143, output
    assert "--resume" in output and not (tmp_path / "run" / "results.json").exists()
    monkeypatch.undo()
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0, output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["sts_by_stage"]


def test_a_swallowed_signal_is_never_reported_as_success(tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys):
    """Whatever code catches the interrupt on the way, a received signal ends with its exit code."""
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")

    class Swallow(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 1:
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                except KeyboardInterrupt:
                    pass

    code, output = _train(config, capsys, monkeypatch, Swallow())
    assert code == 130 and "interrupted" in output


def test_a_full_disk_during_a_checkpoint_stops_cleanly_and_resume_reproduces_the_run(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, uninterrupted
):
    import errno

    from tests.conftest import assert_one_line_error

    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    real_save = PcctuneTrainer._save_checkpoint

    def disk_fills_at_step_4(self, *args, **kwargs):
        if self.state.global_step == 4:
            partial = tmp_path / "run" / "stage1-pcc" / "checkpoints" / "checkpoint-4"
            partial.mkdir(parents=True)
            (partial / "model.safetensors").write_bytes(b"\x00" * 8)  # cut short
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(PcctuneTrainer, "_save_checkpoint", disk_fills_at_step_4)
    code, output = run_cli(["train", str(config)], capsys)
    lines = "\n".join(line for line in output.splitlines() if "%|" not in line and not line.startswith("{"))
    assert_one_line_error(code, lines, "the disk is full (No space left on device)")
    monkeypatch.undo()
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0, output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["sts_by_stage"] == uninterrupted["sts_by_stage"]


def test_sigint_during_the_test_evaluation_exits_130_and_resume_scores_the_run(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys
):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    real = pipeline.evaluate_sts

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "evaluate_sts", interrupted)
    code, output = run_cli(["train", str(config)], capsys)
    assert code == 130 and "--resume" in output and not (tmp_path / "run" / "results.json").exists()
    monkeypatch.undo()
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0 and json.loads((tmp_path / "run" / "results.json").read_text())["sts_by_stage"]


def test_an_interrupted_test_evaluation_keeps_its_vectors_and_resume_encodes_only_the_rest(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, caplog
):
    import pcctune.modeling.encoding as encoding

    monkeypatch.setattr(encoding, "default_token_budget", lambda model: 16)  # many small batches, in every run
    whole = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "whole")
    assert run_cli(["train", str(whole)], capsys)[0] == 0
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    real = pipeline.evaluate_sts

    def interrupted_at_batch_4(*args, **kwargs):
        count_encoded_batches(monkeypatch, interrupt_at=4)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "evaluate_sts", interrupted_at_batch_4)
    code, output = run_cli(["train", str(config)], capsys)
    kept = tmp_path / "run" / "eval-pcc.vectors.npz"
    assert code == 130 and kept.is_file(), output
    monkeypatch.setattr(pipeline, "evaluate_sts", real)
    caplog.set_level(logging.INFO, logger="pcctune.modeling.vector_store")
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0, output
    assert "continuing an interrupted evaluation: " in caplog.text and not kept.exists()
    scores = [json.loads((tmp_path / run / "results.json").read_text())["sts_by_stage"] for run in ("whole", "run")]
    assert scores[0] == scores[1]
