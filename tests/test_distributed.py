"""Global-batch losses: two gloo processes equal one process on the same global batch.

Each process embeds its half of the batch with a tiny BERT (dropout off), computes the loss,
back-propagates, and averages parameter gradients across processes as DDP does. Loss and
gradients must equal the single-process values to 1e-6, for the Pearson loss and for InfoNCE
with hard negatives, with and without GradCache mini-batches.
"""

from __future__ import annotations

import os
import pickle
import socket
import time
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from pcctune.distributed import close_process_group
from pcctune.losses import InfoNCELoss, PearsonLoss
from pcctune.losses.length_chunks import LengthChunker
from pcctune.modeling.build import build_model
from tests.conftest import SENTENCES, pairs_jsonl

GLOBAL = 8
SCORES = [0.5, 4.2, 2.0, 3.3, 1.1, 4.9, 2.7, 0.0]


def _features(model, sentences):
    return model.preprocess(sentences)


def _columns(kind: str, begin: int, end: int) -> list[list[str]]:
    s = SENTENCES
    anchors = [s[i % len(s)] for i in range(begin, end)]
    positives = [s[(i + 1) % len(s)] for i in range(begin, end)]
    negatives = [s[(i + 5) % len(s)] for i in range(begin, end)]
    return [anchors, positives, negatives] if kind == "infonce" else [anchors, positives]


def _loss_and_grads(model_path: str, kind: str, mini_batch: int | None, begin: int, end: int):
    torch.manual_seed(0)
    model = build_model(model_path, device="cpu")  # gloo: CPU processes
    model.eval()  # no dropout: the two runs must see the same function
    model.double()  # float64, so that 1e-6 measures the method and not fp32 summation order
    loss_fn = PearsonLoss(model, mini_batch) if kind == "pearson" else InfoNCELoss(model, 0.05, mini_batch)
    features = [_features(model, column) for column in _columns(kind, begin, end)]
    labels = torch.tensor(SCORES[begin:end], dtype=torch.float64)
    loss = loss_fn(features, labels)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


CASES = [(kind, mini_batch) for kind in ("pearson", "infonce") for mini_batch in (None, 2)]


def _worker(rank: int, world: int, port: int, model_path: str, out: str):
    """Every case in one process group (one spawn for all of them): rank 0 pickles {case: (loss, grads)}."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    results = {}
    try:
        half = GLOBAL // world
        for kind, mini_batch in CASES:
            loss, grads = _loss_and_grads(model_path, kind, mini_batch, rank * half, (rank + 1) * half)
            # What DDP does: average the loss for logging and every gradient across ranks.
            dist.all_reduce(loss)
            loss /= world
            for grad in grads.values():
                dist.all_reduce(grad)
                grad /= world
            results[(kind, mini_batch)] = (loss, grads)
        results["head_sync"] = {synced: _heads_after_steps(model_path, rank, synced) for synced in (True, False)}
        results["sharded"] = _sharded_encoding(model_path)
        if rank == 0:
            with open(out, "wb") as handle:
                pickle.dump(results, handle)
    finally:
        close_process_group()


def _heads_after_steps(model_path: str, rank: int, synced: bool) -> bool:
    """Three optimizer steps of a regression head on each rank's own pairs; True when both ranks' heads agree.

    The head belongs to the loss, outside the DDP-wrapped model: without :class:`SyncLossParameters` its
    gradients are never averaged and each rank's copy drifts apart.
    """
    from pcctune.losses.regression import RegressionLoss
    from pcctune.training.callbacks import SyncLossParameters

    torch.manual_seed(rank)  # different initial heads too: the callback's broadcast must align them
    model = build_model(model_path, device="cpu")  # gloo: CPU processes
    loss_fn = RegressionLoss(model, model.get_embedding_dimension(), "mse")
    head = list(loss_fn.head.parameters())
    callback = SyncLossParameters(head)
    optimizer = torch.optim.SGD(head, lr=0.5)
    if synced:
        callback.on_train_begin(None, None, None)
    for step in range(3):
        begin = (rank * 3 + step) % len(SENTENCES)
        columns = [
            _features(model, [SENTENCES[(begin + i) % 12] for i in range(4)]),
            _features(model, [SENTENCES[(begin + i + 5) % 12] for i in range(4)]),
        ]
        optimizer.zero_grad()
        loss_fn(columns, torch.tensor([rank + 0.5, 1.0, 2.0, 4.0 - rank])).backward()
        if synced:
            callback.on_pre_optimizer_step(None, None, None)
        optimizer.step()
    weights = loss_fn.head.weight.detach().clone()
    gathered = [torch.empty_like(weights) for _ in range(2)]
    dist.all_gather(gathered, weights)
    return bool(torch.equal(gathered[0], gathered[1]))


def _sharded_encoding(model_path: str) -> dict:
    """encode_unique under DDP: every rank encodes its shard; rank 0's gathered vectors and shard size."""
    import pcctune.modeling.encoding as encoding

    encoded: list[int] = []
    real = encoding.encode_texts

    def counting(model, texts, *args, **kwargs):
        encoded.append(len(texts))
        return real(model, texts, *args, **kwargs)

    encoding.encode_texts = counting
    try:
        vectors = encoding.encode_unique(build_model(model_path), [*SENTENCES, *SENTENCES[:5]], show_progress=False)
    finally:
        encoding.encode_texts = real
    counts = [None, None]
    dist.all_gather_object(counts, sum(encoded))
    return {"vectors": vectors, "counts": counts}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _spawn_with_deadline(worker, args: tuple, timeout_s: float = 300) -> None:
    """``mp.spawn`` of two processes, killed and failed when they do not finish in ``timeout_s`` (a deadlock; they
    take under a minute on two busy cores)."""
    context = mp.spawn(worker, args=args, nprocs=2, join=False)
    deadline = time.monotonic() + timeout_s
    while not context.join(timeout=max(0.0, deadline - time.monotonic())):
        if time.monotonic() >= deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"two processes still running after {timeout_s} s: one waits on a collective, or never exits")


def _rank0_results(worker, tiny_bert, folder) -> Any:
    """What rank 0 of two spawned processes running ``worker`` on ``tiny_bert`` pickled into ``folder``."""
    out = str(folder / "rank0.pkl")
    _spawn_with_deadline(worker, (2, _free_port(), str(tiny_bert), out))
    with open(out, "rb") as handle:
        return pickle.load(handle)


@pytest.fixture(scope="module")
def two_process_results(tiny_bert, tmp_path_factory):
    return _rank0_results(_worker, tiny_bert, tmp_path_factory.mktemp("ddp"))


@pytest.mark.parametrize(("kind", "mini_batch"), CASES)
def test_two_processes_equal_one(tiny_bert, two_process_results, kind, mini_batch):
    single_loss, single_grads = _loss_and_grads(str(tiny_bert), kind, mini_batch, 0, GLOBAL)
    loss, grads = two_process_results[(kind, mini_batch)]
    assert torch.allclose(loss, single_loss, atol=1e-6), (loss, single_loss)
    assert grads.keys() == single_grads.keys()
    for name, grad in grads.items():
        assert torch.allclose(grad, single_grads[name], atol=1e-6), (name, (grad - single_grads[name]).abs().max())
    assert any(g.abs().sum() > 0 for g in grads.values())


def test_loss_owned_parameters_stay_equal_across_processes(two_process_results):
    """The regression head (a loss's own parameter) is synchronised by the callback, and drifts without it."""
    assert two_process_results["head_sync"] == {True: True, False: False}


def test_sharded_encoding_equals_one_process_and_splits_the_work(tiny_bert, two_process_results):
    import numpy as np

    from pcctune.modeling.encoding import encode_unique

    sharded = two_process_results["sharded"]
    single = encode_unique(build_model(str(tiny_bert)), SENTENCES, show_progress=False)
    assert set(sharded["vectors"]) == set(single) and sharded["counts"] == [6, 6]  # 12 distinct texts, half each
    for text, vector in single.items():
        np.testing.assert_allclose(sharded["vectors"][text], vector, atol=1e-6)


def test_pipeline_under_torchrun_with_two_processes(tiny_bert, mini_senteval, tmp_path):
    """`torchrun --nproc-per-node 2 -m pcctune.cli train`: two stages, one results file, rank 0 only."""
    import json
    import subprocess
    import sys

    pairs_jsonl(tmp_path / "pairs.jsonl", 32)
    stage = {
        "data": {"source": "pairs", "path": str(tmp_path / "pairs.jsonl")},
        "batch_size": 8,
        "mini_batch_size": 2,
        "max_steps": 2,
        "eval_steps": 1,
        "dev": "sick-trial",
    }
    config = {
        "model": str(tiny_bert),
        "data_dir": str(mini_senteval),
        "output_dir": str(tmp_path / "run"),
        "evaluate_before": False,
        "stages": [
            {"name": "one", "loss": "pearson", **stage},
            # the clock's resume points: every rank must save at the same step (``timed_saves``)
            {"name": "two", "loss": "pearson", **stage, "max_steps": 3, "eval_steps": 2, "save_every_minutes": 1e-9},
        ],
    }
    (tmp_path / "run.yaml").write_text(json.dumps(config))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(_free_port()),
            "-m",
            "pcctune.cli",
            "train",
            str(tmp_path / "run.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert set(record["sts_by_stage"]) == {"one", "two"}
    assert (tmp_path / "run" / "stage2-two" / "final" / "modules.json").is_file()
    assert done.stdout.count("results ->") == 1  # only rank 0 evaluates and writes
    saved = sorted(p.name for p in (tmp_path / "run" / "stage2-two" / "checkpoints").glob("checkpoint-*"))
    assert saved == ["checkpoint-2", "checkpoint-3"]  # step 1's resume point gave way to step 2's checkpoint


CHUNK_MODES = ("off", "auto", "on")


def _uneven_columns(rank: int) -> list[list[str]]:
    """Rank 0: one long text, five of half its length and ten short ones (three chunks); rank 1: sixteen short
    texts (one chunk)."""
    short = [f"{a} {b}" for a, b in zip("abcdefgh", "ijklmnop", strict=True)]
    if rank == 1:
        return [short, short[::-1]]
    long, half = " ".join(SENTENCES[:10]), [" ".join(SENTENCES[i : i + 5]) for i in range(5)]
    return [[long, *half[:4], *short[:3]], [half[4], *short[1:]]]


def _chunked_ddp_worker(rank: int, world: int, port: int, model_path: str, out: str) -> None:
    """Rank 0 pickles ``_chunked_ddp_steps``'s results."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        results = _chunked_ddp_steps(rank, world, model_path)
        if rank == 0:
            with open(out, "wb") as handle:
                pickle.dump(results, handle)
    finally:
        close_process_group()  # after the DDP wrapper is gone: a reducer freed last hangs gloo at exit


def _chunked_ddp_steps(rank: int, world: int, model_path: str) -> dict:
    """A DDP-wrapped tiny BERT (buffers broadcast in every forward: a collective each time) trained one step per
    ``length_chunks`` mode on batches of different length profiles: each mode's loss, averaged gradients and every
    process's forward passes (their token counts)."""
    torch.manual_seed(0)
    model = build_model(model_path, device="cpu")
    model.eval()
    model.double()
    # as transformers' Trainer wraps it (ddp_find_unused_parameters: BERT's pooler takes no part in the loss)
    wrapped = DistributedDataParallel(model, find_unused_parameters=True)
    assert wrapped.broadcast_buffers and list(model.buffers())
    tokens: list[int] = []
    model.register_forward_pre_hook(lambda _, args: tokens.append(args[0]["input_ids"].numel()))
    features = [model.preprocess(column) for column in _uneven_columns(rank)]
    labels = torch.tensor(SCORES, dtype=torch.float64).roll(rank)
    results = {}
    for mode in CHUNK_MODES:
        loss_fn = PearsonLoss(model)
        loss_fn.model = wrapped  # what sentence-transformers' trainer does with a wrapped model
        loss_fn.length_chunks = LengthChunker(mode)
        wrapped.zero_grad()
        tokens.clear()
        loss = loss_fn([dict(f) for f in features], labels)
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
        forwards: list[list[int] | None] = [None] * world
        dist.all_gather_object(forwards, list(tokens))
        results[mode] = (loss.detach(), grads, forwards)
    return results


@pytest.fixture(scope="module")
def chunked_ddp_results(tiny_bert, tmp_path_factory):
    return _rank0_results(_chunked_ddp_worker, tiny_bert, tmp_path_factory.mktemp("ddp-chunks"))


def test_length_chunks_under_ddp_run_equal_forward_passes_with_the_unchunked_gradients(chunked_ddp_results):
    """``off`` and ``auto`` embed each column whole on every process; ``on`` chunks rank 0's long text apart and
    splits rank 1's one chunk to as many: every process runs as many forward passes, the numbers are the same."""
    off_loss, off_grads, off_forwards = chunked_ddp_results["off"]
    assert [len(f) for f in off_forwards] == [2, 2]  # one forward per column on each process
    for mode in ("auto", "on"):
        loss, grads, forwards = chunked_ddp_results[mode]
        torch.testing.assert_close(loss, off_loss, atol=1e-10, rtol=1e-9)
        assert grads.keys() == off_grads.keys() and grads
        for name, grad in grads.items():
            torch.testing.assert_close(grad, off_grads[name], atol=1e-10, rtol=1e-8, msg=name)
    assert chunked_ddp_results["auto"][2] == off_forwards
    on = chunked_ddp_results["on"][2]
    assert [len(f) for f in on] == [3, 3]  # rank 0's three chunks; rank 1 split its one chunk to as many
    assert sum(on[0]) < sum(off_forwards[0]) / 2  # rank 0 ran fewer padded tokens: its long text on its own
