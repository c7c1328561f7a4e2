"""Fast encoding of many sentences: each distinct text once, sorted by token length, batched by a token budget.

What ``SentenceTransformer.encode`` does differently, and why pcctune has its own path for the
evaluations, the dev evaluations during training and ``pcctune encode``:

1. **Distinct texts once.** The STS test sets repeat sentences (26,126 distinct of about 37,700).
2. **Token-length order.** ``encode`` sorts by character length; a sort by the token count the
   model will see (template included) groups equal lengths exactly.
3. **A token budget per batch** instead of a fixed sentence count: a batch holds as many texts as
   fit ``token_budget`` padded tokens, so short sentences run in large batches (better use of
   the matrix units) and long ones in small ones (bounded memory), with almost no padding. The
   default depends on the model (``default_token_budget``).
4. ``torch.inference_mode`` and float32 results, no float64 copies.
5. **The template's prefix once.** A decoder runs the tokens before ``{text}`` once per call and each batch
   over their cached key/values (``pcctune.modeling.prefix_cache``).
6. **oneDNN's GEMM on CPU** for the float32 linear layers, each weight reordered once into oneDNN's blocked layout
   (``pcctune.modeling.onednn``).
7. **Batches side by side on CPU**, one core each, instead of each batch split over all cores
   (``pcctune.modeling.cpu_workers``), with freed activations kept for the next batch instead of returned to
   the kernel (``pcctune.modeling.cpu_memory``).

   6 and 7 reach beyond the call (a layer's class, threads, the allocator): the ``pcctune`` command turns them on,
   the Python API only when asked (``pcctune.host_settings``).
8. **Shards under DDP.** With several processes, each encodes every world-th distinct text and
   the vectors are gathered, instead of rank 0 encoding everything while the others wait.
9. **Resumable.** With a ``VectorStore``, finished batches are kept on
   disk and a rerun skips them (the batch plan does not depend on what is stored: same vectors).

Embeddings equal ``encode``'s up to float rounding of differently padded batches (tested).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, closing
from typing import Any, TypedDict, Unpack

import numpy as np
import torch
import torch.distributed as dist
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import batch_to_device, truncate_embeddings
from torch import nn
from tqdm.auto import tqdm

from pcctune.distributed import get_rank, get_world_size, is_distributed
from pcctune.host_settings import host_settings
from pcctune.modeling.build import is_decoder_only
from pcctune.modeling.cpu_memory import keep_freed_memory, release_freed_memory
from pcctune.modeling.cpu_workers import cpu_workers, map_in_workers, tokenized, tokenizer_lock
from pcctune.modeling.onednn import frozen_weights, onednn_linears
from pcctune.modeling.prefix_cache import CachedPrefix, cached_prefix
from pcctune.modeling.prompts import prompt_in_force
from pcctune.modeling.shared_changes import Undo, shared_changes
from pcctune.modeling.vector_store import VectorStore

# all-MiniLM-L6-v2: best of 512–8,192 on the earlier records' AMD EPYC; 1,024–4,096 within noise on an AVX2-only one
ENCODER_TOKEN_BUDGET = 2048  # (benchmarks/results/speed)
DECODER_TOKEN_BUDGET = 768  # SmolLM2-135M: 49–54 s at 512–1,024, 58 s at 2,048 for 1,000 sentences (same)
MAX_BATCH = 512


def default_token_budget(model: SentenceTransformer) -> int:
    """Padded tokens per batch when none is asked: smaller for a decoder LLM, whose wider layers and longer
    (templated) inputs gain less from large batches than a small encoder's."""
    backbone = getattr(model[0], "auto_model", None)
    config = getattr(backbone, "config", None)
    return DECODER_TOKEN_BUDGET if config is not None and is_decoder_only(config) else ENCODER_TOKEN_BUDGET


def token_lengths(model: SentenceTransformer, texts: Sequence[str], prompt: str | None = None) -> list[int]:
    """The number of tokens the model's input module will give each text (its template and ``prompt`` included),
    capped: the module's own ``preprocess``, unpadded."""
    unpadded = {"text": {"padding": False}, "common": {"return_tensors": None}}
    module: Any = model[0]
    with tokenizer_lock(model):
        found = module.preprocess(list(texts), prompt=prompt, processing_kwargs=unpadded)
    if "offsets" in found:  # a bag of tokens (StaticEmbedding): one flat row, each text starting at its offset
        starts = [int(offset) for offset in found["offsets"]] + [len(found["input_ids"])]
        lengths = [end - start for start, end in zip(starts, starts[1:], strict=False)]
    else:
        lengths = [len(row) for row in found["input_ids"]]
    cap = model.max_seq_length or max(lengths, default=1)
    return [min(length, cap) for length in lengths]


def length_batches(lengths: Sequence[int], token_budget: int, max_batch: int = MAX_BATCH) -> list[list[int]]:
    """Indices grouped longest first, each group padded to its first (longest) member within ``token_budget``."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for index in order:
        if (
            batches
            and len(batches[-1]) < max_batch
            and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= token_budget
        ):
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def encode_texts(
    model: SentenceTransformer,
    texts: Sequence[str],
    token_budget: int | None = None,
    show_progress: bool = False,
    reuse_prefix: bool = True,
    onednn: bool | None = None,
    store: VectorStore | None = None,
    prompt: str | None = None,
    prompt_name: str | None = None,
) -> np.ndarray:
    """Sentence embeddings of ``texts`` (float32, in input order) under the prompt ``model.encode`` would apply
    with the same ``prompt`` / ``prompt_name`` (default: the model's default prompt; ``pcctune.modeling.prompts``),
    batched by token length and budget (default: ``default_token_budget``); a decoder runs its template's prefix
    once (``reuse_prefix``, ``prefix_cache``); float32 linear layers on CPU run through oneDNN where ``onednn`` says
    so (default: where the ``host_settings`` in force say so, as they also give the number of worker threads);
    batches that ``store`` holds are taken from it, and the others added to it.

    The model is in eval mode for the call; calls on one model may overlap, in several threads: the last to end
    gives every module its own mode back (``shared_changes``)."""
    if not texts:
        return np.zeros((0, model.get_embedding_dimension() or 0), dtype=np.float32)
    settings = host_settings()
    if settings.keep_freed_memory and model.device.type == "cpu":
        keep_freed_memory()
    out: list[np.ndarray | None] = [None] * len(texts)
    prompt = prompt_in_force(model, prompt, prompt_name)
    try:
        batches = length_batches(token_lengths(model, texts, prompt), token_budget or default_token_budget(model))
        with (
            evaluating(model),
            torch.inference_mode(),
            onednn_linears(model, active=settings.onednn if onednn is None else onednn),
            frozen_weights(),
        ):
            prefix = cached_prefix(model, prompt) if reuse_prefix else None
            stored = [store is not None and all(texts[i] in store for i in batch) for batch in batches]
            todo = [[texts[i] for i in batch] for batch, done in zip(batches, stored, strict=True) if not done]
            workers = cpu_workers(model, settings.workers)
            keep = store.add if store is not None else None  # every batch finished before a Ctrl-C
            work = map_in_workers(lambda b: _encode_batch(model, b, prompt, prefix), todo, workers, model, keep)
            progress = tqdm(batches, desc="Encoding", unit="batch", disable=not show_progress)
            with closing(work) as computed:
                _gather(texts, zip(progress, stored, strict=True), computed, store, out)
        if workers > 1 and not settings.keep_freed_memory:
            release_freed_memory()  # the workers' heaps, not trimmed when their threads end
    finally:
        if store is not None:
            store.flush()  # also when interrupted: what was encoded is kept
    return np.stack(out)  # type: ignore[arg-type]


def _gather(
    texts: Sequence[str],
    batches: Iterable[tuple[list[int], bool]],
    computed: Iterator[np.ndarray],
    store: VectorStore | None,
    out: list[np.ndarray | None],
) -> None:
    """Each batch's vectors into ``out`` at its texts' places: from ``store`` where it holds the batch (``True``),
    else the next of ``computed``, which ``store`` then keeps."""
    for batch, done in batches:
        batch_texts = [texts[i] for i in batch]
        if done:
            vectors = np.stack([store.vectors[text] for text in batch_texts])  # type: ignore[union-attr]
        else:
            vectors = next(computed)
            if store is not None:
                store.add(batch_texts, vectors)
        for row, index in enumerate(batch):
            out[index] = vectors[row]


def _to_eval_mode(model: nn.Module) -> Undo:
    """Put ``model`` in eval mode; how to give each of its modules its own mode back (through ``train``, which some
    modules extend, e.g. to drop an eval-time cache)."""
    modes = [(module, module.training) for module in model.modules()]
    model.eval()

    def undo() -> None:
        for module, training in modes:  # parents first: a module's train() sets its children, fixed after it
            if module.training != training:
                module.train(training)

    return undo


def evaluating(model: nn.Module) -> AbstractContextManager[int]:
    """``model`` in eval mode for the block, shared with overlapping blocks on the same model."""
    return shared_changes([model], "eval mode", _to_eval_mode)


def _encode_batch(
    model: SentenceTransformer, texts: list[str], prompt: str | None, prefix: CachedPrefix | None
) -> np.ndarray:
    """One batch's embeddings under ``prompt``, over the template prefix's cached key/values where they apply, cut to
    the model's ``truncate_dim`` as ``model.encode`` cuts them (a Matryoshka model saved with one)."""
    features = batch_to_device(tokenized(model, texts, prompt), model.device)
    if prefix is not None and prefix.covers(features["input_ids"]):
        embeddings = prefix.embed(model, features)
    else:
        embeddings = model(features)["sentence_embedding"]
    return truncate_embeddings(embeddings, model.truncate_dim).float().cpu().numpy()


class EncodeOptions(TypedDict, total=False):
    """``encode_texts``'s options, passed on by the functions that encode through it."""

    token_budget: int | None
    show_progress: bool
    reuse_prefix: bool
    onednn: bool | None
    store: VectorStore | None
    prompt: str | None
    prompt_name: str | None


def encode_unique(
    model: SentenceTransformer,
    sentences: Sequence[str],
    shard: bool = True,
    **options: Unpack[EncodeOptions],
) -> dict[str, np.ndarray]:
    """Each distinct sentence's embedding (``options``: ``encode_texts``'s; progress shown unless told not to).

    Under DDP with ``shard`` (every process must call it), each process encodes its shard and all
    get every vector. ``shard=False`` encodes everything here, without collectives: for code that
    only rank 0 runs, such as an evaluator inside sentence-transformers' trainer, whose other ranks
    meanwhile serve its own distributed ``encode``.
    """
    options = {"show_progress": True, **options}
    unique = sorted(set(sentences))
    if not (shard and is_distributed()):
        return dict(zip(unique, encode_texts(model, unique, **options), strict=True))
    options.pop("store", None)  # one file for one process: a sharded encoding is not resumable
    mine = unique[get_rank() :: get_world_size()]
    vectors = dict(zip(mine, encode_texts(model, mine, **options), strict=True))
    gathered: list[dict[str, np.ndarray] | None] = [None] * get_world_size()
    dist.all_gather_object(gathered, vectors)
    return {text: vector for part in gathered if part for text, vector in part.items()}
