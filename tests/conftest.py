"""Fixtures over :mod:`pcctune.testing`'s tiny random models and miniature SentEval folder, and CLI helpers."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

import pytest
import torch

from pcctune.testing import (
    SENTENCES,
    make_mini_senteval,
    metaspace_tokenizer,
    save_tiny_llama,
    save_tiny_model,
    write_mini_transfer,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# What pcctune keeps between commands (resume state, caches) goes to a scratch folder, not the user's cache.
if "PCCTUNE_CACHE" not in os.environ:
    os.environ["PCCTUNE_CACHE"] = tempfile.mkdtemp(prefix="pcctune-test-cache-")
    atexit.register(shutil.rmtree, os.environ["PCCTUNE_CACHE"], ignore_errors=True)
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
if os.environ.get("PYTEST_XDIST_WORKER"):  # xdist runs one worker per core: one thread each
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def metaspace_llama(tmp_path_factory) -> Path:
    """A tiny Llama whose tokenizer works like Llama-2's and Mistral's (SentencePiece/Metaspace)."""
    return save_tiny_llama(tmp_path_factory.mktemp("metaspace-llama"), metaspace_tokenizer())


@pytest.fixture(scope="session")
def bf16_llama(tmp_path_factory) -> Path:
    """A tiny Metaspace Llama whose weights are stored in bf16, as most decoder checkpoints on the Hub."""
    return save_tiny_llama(tmp_path_factory.mktemp("bf16-llama"), metaspace_tokenizer(), torch.bfloat16)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert"), "bert")


@pytest.fixture(scope="session")
def tiny_mpnet(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-mpnet"), "mpnet")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-llama"), "llama")


@pytest.fixture()
def mini_senteval(tmp_path) -> Path:
    """A SentEval-shaped folder with every file the seven tasks and the stage-2 set read (the test's own copy)."""
    return make_mini_senteval(tmp_path / "senteval")


@pytest.fixture(scope="session")
def shared_senteval(tmp_path_factory) -> Path:
    """The same folder, made once for the session: for tests that only read it."""
    return make_mini_senteval(tmp_path_factory.mktemp("shared") / "senteval")


def encode_both_padding_sides(model, sentences):
    """Embeddings of ``sentences`` with right padding, then with left padding (side restored after)."""
    tokenizer = model[0].tokenizer
    side = tokenizer.padding_side
    try:
        tokenizer.padding_side = "right"
        right = model.encode(sentences, convert_to_tensor=True)
        tokenizer.padding_side = "left"
        left = model.encode(sentences, convert_to_tensor=True)
    finally:
        tokenizer.padding_side = side
    return right, left


@pytest.fixture()
def mini_transfer(mini_senteval) -> Path:
    """Adds the seven transfer tasks' files (tiny, clearly learnable) to the mini SentEval folder."""
    return write_mini_transfer(mini_senteval)


def run_cli(args, capsys):
    """Run ``pcctune ARGS`` through the real entry point; return (exit code, stdout + stderr)."""
    old = sys.argv
    sys.argv = ["pcctune", *args]
    try:
        with pytest.raises(SystemExit) as done:
            from pcctune.cli import main

            main()
            raise SystemExit(0)
    finally:
        sys.argv = old
    captured = capsys.readouterr()
    return done.value.code, captured.out + captured.err


AUDIT_LINE = re.compile(r"^stage \S+: .* of [\d,]+ pairs are test pairs at \w+")
"""A line of the leakage audit a run prints before its first step (``pcctune.training.audit.audit_line``)."""


def assert_one_line_error(code, output, pattern):
    """Exit code 2 and one line saying what is wrong: nothing else but the leakage audit's lines the run printed
    before it stopped."""
    assert code == 2
    lines = [line for line in output.strip().splitlines() if line.strip() and not AUDIT_LINE.match(line)]
    assert len(lines) == 1, output
    assert lines[0].startswith("error:") and pattern in lines[0], output
    assert "Traceback" not in output


def pairs_jsonl(path: Path, count: int = 48, distinct: bool = False) -> Path:
    """A jsonl file of ``count`` scored pairs of the test sentences (scores 0–5, varied), for tiny training runs;
    ``distinct`` numbers every text, as in-batch negatives need (their sampler drops a batch with a repeat)."""
    import json

    tag = (lambda i: f" {i}") if distinct else (lambda i: "")
    rows = [
        {
            "sentence1": SENTENCES[i % 12] + tag(i),
            "sentence2": SENTENCES[(i * 5 + 1) % 12] + tag(i),
            "score": (i * 7) % 11 / 2,
        }
        for i in range(count)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def hub_cache(root: Path, repo: str, model: Path, commit: str) -> Path:
    """``root`` laid out as a Hugging Face cache holding ``model`` as ``repo`` at ``commit`` (its ``main``)."""
    folder = root / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model, folder / "snapshots" / commit)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    return root


def write_csv(path: Path, rows, header=("sentence1", "sentence2", "score")) -> Path:
    """``rows`` as a csv file with ``header``, quoted as the csv module quotes: a user's pair file."""
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def one_step_stage2(**stage) -> dict:
    """One Pearson step of 2 pairs on the stage-2 set, no dev set: the shared quickest training stage."""
    return {
        "name": "pcc",
        "loss": "pearson",
        "data": {"source": "stage2"},
        "batch_size": 2,
        "max_steps": 1,
        "dev": "none",
        **stage,
    }


def tiny_run(model: Path, senteval: Path, pairs: Path, out: Path, **stage) -> dict:
    """A one-stage Pearson run on ``pairs`` (6 steps of 8, dev on SICK trial every 2, both filtered at ``pair``: above
    it the miniature SICK trial would give way to the held-out share): the shared tiny config."""
    stage = {
        "name": "pcc",
        "loss": "pearson",
        "data": {"source": "pairs", "path": str(pairs), "leakage": "pair"},
        "batch_size": 8,
        "max_steps": 6,
        "eval_steps": 2,
        "logging_steps": 1,
        "learning_rate": 1e-3,
        "dev": "sick-trial",
        **stage,
    }
    return {
        "model": str(model),
        "data_dir": str(senteval),
        "output_dir": str(out),
        "seed": 3,
        "evaluate_before": False,
        "stages": [stage],
    }


def stage_record(at_last: bool | None, **fields):
    """A trained stage's record (``pcctune.results.StageRecord``) whose best checkpoint was (``at_last``) or was not
    its last dev evaluation; ``fields`` change any other field."""
    from pcctune.results import StageRecord

    values = {
        "stage": "pcc",
        "loss": "pearson",
        "train_examples": 64,
        "trainable_fraction": 1.0,
        "best_checkpoint": "run/stage1-pcc/checkpoints/checkpoint-8",
        "final_dir": "run/stage1-pcc/final",
        "plot": "run/stage1-pcc/curves.png",
        "wall_time_s": 1.0,
    }
    return StageRecord(**values | {"best_at_last_evaluation": at_last} | fields)


def write_run_config(folder: Path, model: Path, senteval: Path, out: Path, **stage) -> Path:
    """``tiny_run``'s config written as ``out.name``.yaml in ``folder``: what ``pcctune train`` reads."""
    import yaml

    config = tiny_run(model, senteval, pairs_jsonl(folder / "pairs.jsonl"), out, **stage)
    path = folder / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def uninterrupted(tiny_bert, shared_senteval, tmp_path_factory) -> dict:
    """One whole tiny run, uninterrupted: what every interrupted-and-resumed run must reproduce."""
    import json
    import subprocess

    folder = tmp_path_factory.mktemp("uninterrupted")
    config = write_run_config(folder, tiny_bert, shared_senteval, folder / "whole")
    done = subprocess.run(
        [sys.executable, "-m", "pcctune.cli", "train", str(config)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((folder / "whole" / "results.json").read_text())


class CountedBatches:
    """Stands in for the encoder's one-batch step: counts the batches it encodes, and sends a real SIGINT at
    batch ``interrupt_at`` (before encoding it)."""

    def __init__(self, real, interrupt_at: int | None = None) -> None:
        self.real, self.interrupt_at, self.calls, self.finished = real, interrupt_at, 0, 0
        self.lock = threading.Lock()  # batches run in worker threads

    def __call__(self, *args):
        with self.lock:
            self.calls += 1
            interrupt = self.calls == self.interrupt_at
        if interrupt:
            os.kill(os.getpid(), signal.SIGINT)
        result = self.real(*args)
        with self.lock:
            self.finished += 1  # a batch stopped by the interrupt raises before this
        return result


def count_encoded_batches(monkeypatch, interrupt_at: int | None = None) -> CountedBatches:
    """Count the batches the encoder encodes from now on (interrupting at batch ``interrupt_at``)."""
    import pcctune.modeling.encoding as encoding

    counted = CountedBatches(getattr(encoding._encode_batch, "real", encoding._encode_batch), interrupt_at)
    monkeypatch.setattr(encoding, "_encode_batch", counted)
    return counted
