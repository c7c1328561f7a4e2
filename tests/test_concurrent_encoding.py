"""Encoding in several threads at once, made deterministic with barriers: each call sees its own continuous prompts,
overlapping calls on one model keep it in eval mode and routed until the last ends, and pcctune tokenizes under the
lock a program's own threads can take."""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch import nn

import pcctune
import pcctune.modeling.encoding as encoding
from pcctune.modeling.build import build_model
from pcctune.modeling.onednn import OneDNNLinear
from tests.conftest import SENTENCES

DEEP = {"prompt_kind": "deep", "prompt_length": 4}


def _in_threads(*targets: Any) -> list[Any]:
    """Run each target in its own thread; their results in order (an exception in one is raised here)."""
    results: list[Any] = [None] * len(targets)

    def run(index: int) -> None:
        try:
            results[index] = targets[index]()
        except BaseException as error:  # noqa: BLE001  (handed to the test's thread)
            results[index] = error

    threads = [threading.Thread(target=run, args=(i,), name=f"caller-{i}") for i in range(len(targets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def test_two_threads_running_dcpcse_mpnet_at_once_each_use_their_own_prompts(tiny_mpnet):
    model = build_model(str(tiny_mpnet), prompt=DEEP, device="cpu").eval()
    two, three = model.preprocess(SENTENCES[:2]), model.preprocess(SENTENCES[2:5])  # batches of different sizes
    with torch.inference_mode():
        expected = [model(dict(features))["sentence_embedding"] for features in (two, three)]
    layers = model[0].prefixed_layers
    both_set = threading.Barrier(2, timeout=30)  # both calls' prompts are set before either layer computes

    def meet(*_: Any) -> None:
        both_set.wait()

    hooks = [layers[0].register_forward_pre_hook(meet), layers[-1].register_forward_pre_hook(meet)]
    try:

        def encode(features: dict[str, Any]) -> torch.Tensor:
            try:
                with torch.inference_mode():
                    return model(dict(features))["sentence_embedding"]
            except Exception:
                both_set.abort()  # the other thread stops waiting
                raise

        got = _in_threads(lambda: encode(two), lambda: encode(three))
    finally:
        for hook in hooks:
            hook.remove()
    for ours, theirs in zip(got, expected, strict=True):
        torch.testing.assert_close(ours, theirs)
    assert all(layer.prefix is None for layer in layers)


def test_overlapping_encodings_of_one_model_keep_it_in_eval_and_routed_until_the_last_ends(tiny_bert, monkeypatch):
    model = build_model(str(tiny_bert), device="cpu").train()
    model[0].auto_model.embeddings.eval()  # a module the user keeps in eval mode
    modes = [module.training for module in model.modules()]
    classes = [type(module) for module in model.modules()]
    linears = [module for module in model.modules() if type(module) is nn.Linear]
    both_inside, first_ended = threading.Barrier(2, timeout=30), threading.Event()
    seen: list[tuple[bool, set[type]]] = []
    real = encoding._encode_batch

    def batch(model: Any, texts: list[str], prompt: str | None, prefix: Any) -> Any:
        both_inside.wait()
        if texts == SENTENCES[1:2]:  # the second call's
            assert first_ended.wait(timeout=30)
            seen.append((any(module.training for module in model.modules()), {type(m) for m in linears}))
        return real(model, texts, prompt, prefix)

    monkeypatch.setattr(encoding, "_encode_batch", batch)

    def first() -> None:
        encoding.encode_texts(model, SENTENCES[:1], onednn=True)
        first_ended.set()

    _in_threads(first, lambda: encoding.encode_texts(model, SENTENCES[1:2], onednn=True))
    assert seen == [(False, {OneDNNLinear})]  # the second call, after the first ended: still in eval, still routed
    assert [module.training for module in model.modules()] == modes
    assert [type(module) for module in model.modules()] == classes


def test_pcctune_tokenizes_under_the_lock_a_programs_own_threads_can_hold(tiny_bert, monkeypatch):
    model = build_model(str(tiny_bert), device="cpu")
    lock = pcctune.tokenizer_lock(model)
    assert pcctune.tokenizer_lock(model) is lock
    held_by_pcctune: list[bool] = []
    real = model.preprocess

    def free() -> bool:
        if not lock.acquire(blocking=False):
            return False
        lock.release()
        return True

    def preprocess(texts: list[str], prompt: str | None = None) -> dict[str, Any]:
        held_by_pcctune.append(not _in_threads(free)[0])  # tried from another thread, as a user's would
        return real(texts, prompt=prompt)

    monkeypatch.setattr(model, "preprocess", preprocess)
    with pcctune.cpu_speedups(workers=2):
        encoding.encode_texts(model, SENTENCES, token_budget=16)
    assert len(held_by_pcctune) > 1 and all(held_by_pcctune)
