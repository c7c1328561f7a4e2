"""Interrupts, partial checkpoints, failed writes and run-folder rules, through the real CLI."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import TrainerCallback

from tests.conftest import assert_one_line_error, count_encoded_batches, run_cli, write_run_config


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """pcctune's cache for this test alone, outside the folder the test's commands are run in."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("PCCTUNE_CACHE", str(cache))
    return cache


def kept_stores(cache: Path, *beside: Path) -> list[Path]:
    """The resume stores of evaluations: in pcctune's cache, or beside an output (where they were once kept)."""
    return sorted([*cache.glob("resume/*/vectors.npz"), *(p for f in beside for p in f.glob("*.vectors.npz"))])


@pytest.fixture(autouse=True)
def ctrl_c_raises_keyboard_interrupt():
    """Python's own SIGINT handler, as in an interactive shell: a process started in the background
    (nohup, ``&``, some CI runners) inherits SIGINT ignored, and then Ctrl-C would do nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class SigintAt(TrainerCallback):
    """Sends the process a real SIGINT (what Ctrl-C sends) after step ``step`` (``saved``: once its checkpoint is
    saved)."""

    def __init__(self, step: int, saved: bool = False) -> None:
        self.step, self.saved = step, saved

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step and not self.saved:
            os.kill(os.getpid(), signal.SIGINT)

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step and self.saved:
            os.kill(os.getpid(), signal.SIGINT)


def _interrupt_training_at(monkeypatch, step: int) -> None:
    import pcctune.orchestration.pipeline as pipeline

    real = pipeline.run_stage

    def with_sigint(*args, **kwargs):
        kwargs["callbacks"] = [SigintAt(step)]
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_stage", with_sigint)


def test_sigint_during_train_exits_130_and_resume_finishes_identically(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, uninterrupted
):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    with monkeypatch.context() as patch:
        _interrupt_training_at(patch, 3)
        code, output = run_cli(["train", str(config)], capsys)
    assert code == 130, output
    assert "Traceback" not in output
    assert f"continue with: pcctune train {config} --resume" in output
    assert (tmp_path / "run" / "stage1-pcc" / "checkpoints" / "checkpoint-2").is_dir()
    assert not (tmp_path / "run" / "results.json").exists()
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0, output
    resumed = json.loads((tmp_path / "run" / "results.json").read_text())
    assert resumed["sts_by_stage"] == uninterrupted["sts_by_stage"]
    assert resumed["stages"][0]["best_dev_spearman"] == pytest.approx(uninterrupted["stages"][0]["best_dev_spearman"])


def test_a_run_folder_moved_after_its_last_checkpoint_still_ends_on_its_best_dev_checkpoint(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, uninterrupted
):
    import pcctune.orchestration.pipeline as pipeline

    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    real = pipeline.run_stage
    with monkeypatch.context() as patch:  # cut after the last step's checkpoint: a resume trains and saves no more
        patch.setattr(pipeline, "run_stage", lambda *a, **k: real(*a, **{**k, "callbacks": [SigintAt(6, saved=True)]}))
        assert run_cli(["train", str(config)], capsys)[0] == 130
    best = Path(uninterrupted["stages"][0]["best_checkpoint"]).name
    assert best != "checkpoint-6"  # the best is not the checkpoint resumed from: the move could lose it
    (tmp_path / "run").rename(tmp_path / "moved")
    moved = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "moved")
    code, output = run_cli(["train", str(moved), "--resume"], capsys)
    assert code == 0, output
    resumed = json.loads((tmp_path / "moved" / "results.json").read_text())
    assert resumed["stages"][0]["best_checkpoint"] == str(tmp_path / "moved" / "stage1-pcc" / "checkpoints" / best)
    assert resumed["sts_by_stage"] == uninterrupted["sts_by_stage"]  # the best dev weights, not the last step's


def test_a_partial_checkpoint_is_skipped_on_resume(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, uninterrupted, caplog
):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run")
    with monkeypatch.context() as patch:
        _interrupt_training_at(patch, 3)
        assert run_cli(["train", str(config)], capsys)[0] == 130
    # A kill while checkpoint-4 was being written: a folder with some of its files, one of them cut short.
    partial = tmp_path / "run" / "stage1-pcc" / "checkpoints" / "checkpoint-4"
    partial.mkdir()
    (partial / "trainer_state.json").write_text('{"global_step": 4, "log_hist')
    (partial / "model.safetensors").write_bytes(b"\x00" * 10)
    from pcctune.training.checkpoints import is_complete, last_complete_checkpoint

    assert not is_complete(partial)
    assert last_complete_checkpoint(partial.parent).endswith("checkpoint-2")
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0, output
    assert "skipping incomplete checkpoint" in caplog.text
    resumed = json.loads((tmp_path / "run" / "results.json").read_text())
    assert resumed["sts_by_stage"] == uninterrupted["sts_by_stage"]


def test_sigint_during_eval_exits_130_and_writes_nothing(tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys):
    import pcctune.orchestration.evaluate as evaluate

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("SIGINT did not interrupt")

    monkeypatch.setattr(evaluate, "evaluate_sts", interrupted)
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(["eval", str(tiny_bert), "--data", str(shared_senteval), "--output", "r.json"], capsys)
    assert code == 130, output
    assert "interrupted; no results were written" in output and "Traceback" not in output
    assert list(tmp_path.iterdir()) == []


EVAL = ["--token-budget", "16"]  # a batch or two of sentences at a time: many batches


def test_an_interrupted_eval_continues_from_its_kept_vectors_to_the_same_numbers(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, private_cache
):
    monkeypatch.chdir(tmp_path)
    command = ["eval", str(tiny_bert), "--data", str(shared_senteval), *EVAL]
    counted = count_encoded_batches(monkeypatch)
    assert run_cli([*command, "--output", "whole.json"], capsys)[0] == 0
    batches, whole = counted.calls, json.loads((tmp_path / "whole.json").read_text())["sts"]
    assert batches >= 8 and kept_stores(private_cache, tmp_path) == []  # a finished one keeps nothing

    cut = count_encoded_batches(monkeypatch, interrupt_at=batches // 2)
    code, output = run_cli([*command, "--output", "cut.json"], capsys)
    assert code == 130 and "run the same command to continue" in output, output
    assert len(kept_stores(private_cache)) == 1 and [p.name for p in tmp_path.iterdir()] == ["whole.json"]

    counted = count_encoded_batches(monkeypatch)
    assert run_cli([*command, "--output", "cut.json"], capsys)[0] == 0
    assert counted.calls == batches - cut.finished  # only the batches the first run had not finished
    assert json.loads((tmp_path / "cut.json").read_text())["sts"] == whole
    assert kept_stores(private_cache, tmp_path) == []


def _cut_in_half(store: Path) -> None:
    store.write_bytes(store.read_bytes()[: store.stat().st_size // 2])


def _random_bytes(store: Path) -> None:
    store.write_bytes(os.urandom(store.stat().st_size))


@pytest.mark.parametrize("damage", ["cut in half", "random bytes", "another evaluation"])
def test_a_damaged_or_foreign_resume_store_gives_the_clean_runs_numbers(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, caplog, private_cache, damage
):
    monkeypatch.chdir(tmp_path)
    command = ["eval", str(tiny_bert), "--data", str(shared_senteval), *EVAL]
    counted = count_encoded_batches(monkeypatch)
    assert run_cli([*command, "--pooling", "mean", "--output", "clean.json"], capsys)[0] == 0
    batches, clean = counted.calls, json.loads((tmp_path / "clean.json").read_text())["sts"]
    foreign = b""
    if damage == "another evaluation":  # all but the last batch of a cls-pooled evaluation
        count_encoded_batches(monkeypatch, interrupt_at=batches)
        assert run_cli([*command, "--pooling", "cls", "--output", "other.json"], capsys)[0] == 130
        [other] = kept_stores(private_cache, tmp_path)
        foreign = other.read_bytes()
    count_encoded_batches(monkeypatch, interrupt_at=batches // 2)
    assert run_cli([*command, "--pooling", "mean", "--output", "r.json"], capsys)[0] == 130
    [store] = [p for p in kept_stores(private_cache, tmp_path) if p.read_bytes() != foreign]
    {"cut in half": _cut_in_half, "random bytes": _random_bytes}.get(damage, lambda p: p.write_bytes(foreign))(store)

    counted = count_encoded_batches(monkeypatch)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        code, output = run_cli([*command, "--pooling", "mean", "--output", "r.json"], capsys)
    assert code == 0, output
    assert counted.calls == batches  # nothing taken from the damaged or foreign store
    assert json.loads((tmp_path / "r.json").read_text())["sts"] == clean
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and str(store) in warnings[0], warnings


def _full_device(folder: Path) -> str:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(folder / "full", stat.S_IFCHR | 0o666, os.makedev(1, 7))  # /dev/full's numbers, in the user's folder
    return "full"


FAILURES = {  # how the command fails -> (its --output, its --data, the exit code and what the error says)
    "ctrl-c": (lambda folder: "r.json", None, 130, "interrupted; no results were written"),
    "full device": (_full_device, None, 2, "No space left on device"),
    "unwritable folder": (lambda folder: "notes.txt/r.json", None, 2, "is a file, not a folder"),
    "bad data": (lambda folder: "r.json", "no-such-folder", 2, "no SentEval data folder"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failed_or_interrupted_eval_adds_no_file_to_the_users_folders_and_the_rerun_resumes(
    tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys, private_cache, failure
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("the user's own file")
    output, data, exit_code, message = FAILURES[failure]
    command = ["eval", str(tiny_bert), *EVAL]
    counted = count_encoded_batches(monkeypatch)
    assert run_cli([*command, "--data", str(shared_senteval), "--output", "clean.json"], capsys)[0] == 0
    batches, clean = counted.calls, json.loads((tmp_path / "clean.json").read_text())["sts"]
    target = output(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())

    counted = count_encoded_batches(monkeypatch, interrupt_at=batches // 2 if failure == "ctrl-c" else None)
    code, said = run_cli([*command, "--data", data or str(shared_senteval), "--output", target], capsys)
    assert code == exit_code and message in said and "Traceback" not in said, said
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing new in the user's folder
    assert shared_senteval.is_dir() and not list(shared_senteval.rglob("*.npz"))

    encoded = counted.finished  # every batch that ran to its end, in either worker, is kept
    counted = count_encoded_batches(monkeypatch)
    assert run_cli([*command, "--data", str(shared_senteval), "--output", "r.json"], capsys)[0] == 0
    assert counted.calls == batches - encoded  # the rerun encodes only what the failed command had not
    assert json.loads((tmp_path / "r.json").read_text())["sts"] == clean


def test_kept_vectors_of_another_evaluation_are_not_used(tiny_bert, shared_senteval, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    command = ["eval", str(tiny_bert), "--data", str(shared_senteval), *EVAL]
    counted = count_encoded_batches(monkeypatch)
    assert run_cli([*command, "--pooling", "cls", "--output", "cls.json"], capsys)[0] == 0
    batches = counted.calls
    count_encoded_batches(monkeypatch, interrupt_at=batches)  # all but the last batch kept, mean-pooled
    assert run_cli([*command, "--pooling", "mean", "--output", "r.json"], capsys)[0] == 130
    counted = count_encoded_batches(monkeypatch)
    assert run_cli([*command, "--pooling", "cls", "--output", "r.json"], capsys)[0] == 0  # other settings
    assert counted.calls == batches  # nothing taken from the mean-pooled vectors
    assert (
        json.loads((tmp_path / "r.json").read_text())["sts"] == json.loads((tmp_path / "cls.json").read_text())["sts"]
    )


def test_a_results_file_survives_a_failed_write(tiny_bert, shared_senteval, tmp_path):
    """A size limit makes the new write fail half-way: the old file stays byte-for-byte, no temp file is left."""
    target = tmp_path / "results.json"
    target.write_text('{"old": "and good"}\n')
    limit = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000)); "
        "from pcctune.cli import main; sys.argv = ['pcctune'] + sys.argv[1:]; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", limit, "eval", str(tiny_bert), "--data", str(shared_senteval), "--output", str(target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"could not write {target}" in done.stderr and "the previous file is unchanged" in done.stderr
    assert target.read_text() == '{"old": "and good"}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path):
    from pcctune.io import write_with

    target = tmp_path / "plot.png"
    target.write_bytes(b"old")

    def half_then_fail(handle):
        handle.write(b"new but incomplete")
        raise RuntimeError("renderer crashed")

    with pytest.raises(RuntimeError):
        write_with(target, half_then_fail)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["plot.png"]


def test_json_refuses_non_finite_numbers_instead_of_writing_nan(tmp_path):
    from pydantic import ValidationError

    from pcctune.errors import PcctuneError
    from pcctune.results import EvalResult, parse_result

    payload = {"kind": "eval", "protocol": "p", "model": "m", "data_dir": "d", "sts": {"STS12": float("nan")}}
    with pytest.raises(ValidationError, match="not a finite number"):
        EvalResult.model_validate({k: v for k, v in payload.items() if k != "kind"})
    with pytest.raises(PcctuneError, match="not a pcctune result .*not a finite number"):
        parse_result(payload)
    with pytest.raises(ValueError):
        from pcctune.io import write_json

        write_json({"x": float("inf")}, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_overwrite_replaces_a_finished_run(tiny_bert, shared_senteval, tmp_path, capsys):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", max_steps=2)
    assert run_cli(["train", str(config)], capsys)[0] == 0
    marker = tmp_path / "run" / "stale.txt"
    marker.write_text("from the old run")
    code, output = run_cli(["train", str(config), "--overwrite"], capsys)
    assert code == 0, output
    assert not marker.exists() and (tmp_path / "run" / "results.json").is_file()


def test_resume_ignores_settings_that_do_not_change_results(tiny_bert, shared_senteval, tmp_path, capsys):
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", max_steps=2)
    assert run_cli(["train", str(config)], capsys)[0] == 0
    before = (tmp_path / "run" / "results.json").read_bytes()
    code, output = run_cli(
        ["train", str(config), "--resume", "--set", "stages.0.logging_steps=5", "--set", "report_to=tensorboard"],
        capsys,
    )
    assert code == 0 and "its results are unchanged" in output
    assert (tmp_path / "run" / "results.json").read_bytes() == before


def test_a_run_saved_before_a_setting_existed_resumes_and_one_with_other_values_does_not(
    tiny_bert, shared_senteval, tmp_path, capsys
):
    import yaml

    from pcctune.training.config import RunConfig, config_fingerprint

    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", max_steps=2)
    assert run_cli(["train", str(config)], capsys)[0] == 0
    (tmp_path / "run" / "results.json").unlink()  # unfinished, as if killed after its last stage
    # the folder as an older pcctune left it: no pooling_head in its config, and a fingerprint computed without it
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    del saved["pooling_head"]
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump(saved))
    old = RunConfig.model_validate(saved).model_dump(mode="json")
    old.pop("pooling_head")
    marker = json.loads((tmp_path / "run" / "run.json").read_text())
    marker["fingerprint"] = hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()
    assert marker["fingerprint"] != config_fingerprint(RunConfig.model_validate(saved))
    (tmp_path / "run" / "run.json").write_text(json.dumps(marker))
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0, output
    assert (tmp_path / "run" / "results.json").is_file()
    # a run whose saved settings differ in value is still refused
    (tmp_path / "run" / "results.json").unlink()
    code, output = run_cli(["train", str(config), "--resume", "--set", "stages.0.learning_rate=0.5"], capsys)
    assert_one_line_error(code, output, "holds a run with other settings")


def test_an_unexpected_error_is_one_line_with_a_pointer_to_debug(monkeypatch, capsys):
    import pcctune.orchestration.bound as bound

    def broken(ns):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(bound, "bounds_for_n", broken)
    code, output = run_cli(["bound", "--n", "5"], capsys)
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and "internal error (ZeroDivisionError: a bug)" in lines[0], output
    assert "--debug" in lines[0] and "Traceback" not in output
    code, output = run_cli(["bound", "--n", "5", "--debug"], capsys)
    assert code == 1 and "Traceback" in output and "ZeroDivisionError" in output


def test_an_unfinished_run_resumes_only_on_as_many_processes_as_it_started_on(
    tiny_bert, shared_senteval, tmp_path, capsys, monkeypatch
):
    """Each process's batch share, data and random draws depend on the number of processes: a run started on one
    is not continued on two. A marker from before the count was kept says nothing of it and is not refused."""
    config = write_run_config(tmp_path, tiny_bert, shared_senteval, tmp_path / "run", max_steps=2)
    assert run_cli(["train", str(config)], capsys)[0] == 0
    marker = json.loads((tmp_path / "run" / "run.json").read_text())
    assert marker["world_size"] == 1
    (tmp_path / "run" / "results.json").unlink()  # unfinished, as if killed after its last stage
    monkeypatch.setenv("WORLD_SIZE", "2")
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert_one_line_error(code, output, "started on 1 process(es), resumed on 2")
    monkeypatch.delenv("WORLD_SIZE")
    del marker["world_size"]
    (tmp_path / "run" / "run.json").write_text(json.dumps(marker))
    code, output = run_cli(["train", str(config), "--resume"], capsys)
    assert code == 0, output
    assert (tmp_path / "run" / "results.json").is_file()
