"""Training health: a non-finite loss stops the stage before it reaches the weights, keeps the last
checkpoint, writes no final model or results, and the run resumes under a lower learning rate."""

from __future__ import annotations

import json

import pytest
import torch
import yaml
from rich.console import Console
from torch import nn

import pcctune.training.stage as stage_module
from pcctune.training.health import SKIPPED
from tests.conftest import assert_one_line_error, pairs_jsonl, run_cli, tiny_run

BAD_STEP = 3
DIVERGES_ABOVE = 5e-4


class DivergesAtStep(nn.Module):
    """The stage's loss, NaN from the ``BAD_STEP``-th call on when the learning rate is above ``DIVERGES_ABOVE``."""

    def __init__(self, loss: nn.Module, learning_rate: float) -> None:
        super().__init__()
        self.loss, self.learning_rate, self.calls = loss, learning_rate, 0

    def forward(self, features, labels):
        self.calls += 1
        value = self.loss(features, labels)
        return value * float("nan") if self.calls >= BAD_STEP and self.learning_rate > DIVERGES_ABOVE else value


@pytest.fixture()
def diverging(monkeypatch):
    real = stage_module.stage_loss

    def wrapped(stage, *args, **kwargs):
        return DivergesAtStep(real(stage, *args, **kwargs), stage.learning_rate)

    monkeypatch.setattr(stage_module, "stage_loss", wrapped)


def _without_progress(output: str) -> str:
    return "\n".join(line for line in output.splitlines() if "%|" not in line and not line.startswith("{"))


def test_a_nan_loss_stops_keeps_the_last_checkpoint_and_resumes_at_a_lower_rate(
    diverging, tiny_llama, mini_senteval, tmp_path, capsys
):
    out = tmp_path / "run"
    config = tiny_run(tiny_llama, mini_senteval, pairs_jsonl(tmp_path / "pairs.jsonl"), out, learning_rate=1e-3)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    code, output = run_cli(["train", str(path)], capsys)
    assert_one_line_error(code, _without_progress(output), f"not finite at step {BAD_STEP}")
    stage = out / "stage1-pcc"
    assert (stage / "checkpoints" / "checkpoint-2").is_dir() and not (stage / "checkpoints" / "checkpoint-4").exists()
    assert not (stage / "final").exists() and not (out / "results.json").exists()
    assert json.loads((out / "run.json").read_text())["stopped_nonfinite"] == {"stage": "pcc", "step": BAD_STEP}
    weights = torch.load(stage / "checkpoints" / "checkpoint-2" / "optimizer.pt", weights_only=False)
    assert all(torch.isfinite(s["exp_avg"]).all() for s in weights["state"].values())
    code, output = run_cli(["train", str(path), "--resume", "--set", "seed=4"], capsys)  # still another run
    assert_one_line_error(code, _without_progress(output), "holds a run with other settings")
    lower = ["--set", "stages.0.learning_rate=0.0002"]
    code, output = run_cli(["train", str(path), "--resume", *lower], capsys)
    assert code == 0, output
    result = json.loads((out / "results.json").read_text())
    assert result["config"]["stages"][0]["learning_rate"] == 2e-4 and (stage / "final").is_dir()
    history = json.loads((stage / "log_history.json").read_text())
    rates = [row["learning_rate"] for row in history if "learning_rate" in row and row["step"] > 2]
    assert rates and max(rates) <= 2e-4  # the resumed schedule runs at the new peak


def test_skip_drops_the_bad_batches_and_finishes(diverging, tiny_llama, mini_senteval, tmp_path):
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    out = tmp_path / "run"
    pairs = pairs_jsonl(tmp_path / "pairs.jsonl")
    config = tiny_run(tiny_llama, mini_senteval, pairs, out, learning_rate=1e-3, on_nonfinite="skip", dev="none")
    console = Console(record=True, width=400)
    record = run_pipeline(RunConfig.model_validate(config), console=console)
    final = stage_module.SentenceTransformer(str(out / "stage1-pcc" / "final"))
    assert all(torch.isfinite(p).all() for p in final.parameters())
    skipped = config["stages"][0]["max_steps"] - BAD_STEP + 1  # every step from the bad one on
    assert record.stages[0].skipped_steps == skipped
    assert f"{skipped} steps skipped for a non-finite loss or gradient" in console.export_text()
    history = json.loads((out / "stage1-pcc" / "log_history.json").read_text())
    assert [row["step"] for row in history if SKIPPED in row] == list(range(BAD_STEP, BAD_STEP + skipped))


def test_a_second_writer_is_refused_and_a_stale_lock_is_taken_over(tiny_llama, mini_senteval, tmp_path, caplog):
    import socket
    import subprocess
    import sys

    from pcctune.errors import PcctuneError
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    out = tmp_path / "run"
    pairs = pairs_jsonl(tmp_path / "pairs.jsonl")
    config = RunConfig.model_validate(tiny_run(tiny_llama, mini_senteval, pairs, out, max_steps=2, dev="none"))
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = {"pid": holder.pid, "host": socket.gethostname(), "started": "2026-11-23T10:00:00+00:00"}
        (out / ".lock").write_text(json.dumps(lock))
        with pytest.raises(PcctuneError, match=f"in use by process {holder.pid} on {socket.gethostname()}"):
            run_pipeline(config)
        assert (out / ".lock").is_file() and not (out / "run.json").exists()
    finally:
        holder.kill()
        holder.wait()
    run_pipeline(config)  # the holder is gone: its lock is stale
    assert "taking over" in caplog.text and (out / "results.json").is_file() and not (out / ".lock").exists()


def test_a_template_longer_than_the_stage_budget_is_one_line_before_training(
    tiny_llama, mini_senteval, tmp_path, capsys
):
    config = tiny_run(
        tiny_llama, mini_senteval, pairs_jsonl(tmp_path / "pairs.jsonl"), tmp_path / "run", max_seq_length=5
    )
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**config, "template": "eol"}))
    code, output = run_cli(["train", str(path)], capsys)
    assert_one_line_error(code, _without_progress(output), "stage 'pcc': the template alone takes")
    assert not (tmp_path / "run").exists()


def test_icl_refuses_an_encoder(tiny_bert, mini_senteval, capsys):
    code, output = run_cli(["icl", str(tiny_bert), "--data", str(mini_senteval), "--dev", "sick-trial"], capsys)
    assert_one_line_error(code, _without_progress(output), "needs a causal language model")
