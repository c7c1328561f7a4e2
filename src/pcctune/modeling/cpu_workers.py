"""Inference batches run side by side on a CPU's cores, one thread each, instead of one batch at a time on all.

torch runs one batch on all cores by splitting each operation among its OpenMP threads, which meet at the end of
every operation; between operations (Python, the tokenizer, pooling) one thread works and the others wait. On a
2-core AVX2-only AMD EPYC, encoding 6,000 STS sentences with all-MiniLM-L6-v2 took 24.2 s and 23.5 s that way,
19.2 s and 19.8 s with two batches at once, one thread each (``benchmarks/results/speed``): the kernels are the
same, so are the vectors (equal to the bit there). torch releases the GIL inside its operations and the
tokenizers inside theirs, so Python threads suffice.

:func:`cpu_workers` gives the number of such workers for a model: torch's thread count on CPU (what the user or the
machine set, e.g. ``OMP_NUM_THREADS``), one on an accelerator or for a model whose backbone runs in another
runtime (ONNX Runtime, OpenVINO) that has threads of its own. :func:`map_in_workers` runs a function over the
batches in that many threads and yields the results in order, so the caller keeps its progress bar and its
order-dependent work (a vector store) in its own thread.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from threading import Lock
from typing import Any, TypeVar

import torch
from torch import nn

from pcctune.modeling.backends import RuntimeBackbone

Batch = TypeVar("Batch")
Result = TypeVar("Result")

TOKENIZER_LOCK = Lock()
"""Held while a worker tokenizes: a fast tokenizer's settings are mutable state in Rust, which two threads
setting at once would find already borrowed."""


def cpu_workers(model: nn.Module) -> int:
    """How many batches to run at once: torch's thread count for a torch model on CPU, else one."""
    device = next(model.parameters(), torch.empty(0)).device
    runtime = any(isinstance(module, RuntimeBackbone) for module in model.modules())
    return 1 if device.type != "cpu" or runtime else max(1, torch.get_num_threads())


def _one_thread() -> None:
    torch.set_num_threads(1)


def map_in_workers(function: Callable[[Batch], Result], batches: Iterable[Batch], workers: int) -> Generator[Result]:
    """``map(function, batches)`` in inference mode, over ``workers`` threads of one torch thread each (in this
    thread, unchanged, when ``workers`` is 1); results come in the order of ``batches``."""

    def run(batch: Batch) -> Result:
        with torch.inference_mode():
            return function(batch)

    if workers <= 1:
        yield from map(run, batches)
        return
    threads = torch.get_num_threads()
    pool = ThreadPoolExecutor(max_workers=workers, initializer=_one_thread, thread_name_prefix="pcctune-encode")
    try:  # each batch in a copy of the caller's context: its scopes (e.g. oneDNN's frozen weights) hold there too
        futures = [pool.submit(copy_context().run, run, batch) for batch in batches]
        for future in futures:
            yield future.result()
    finally:  # stopped early (an error, Ctrl-C): the batches not begun are dropped, not run
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(threads)  # torch keeps the last count set in any thread for threads that start later


def tokenized(model: Any, texts: list[str]) -> dict[str, Any]:
    """The model's input features of ``texts`` (``SentenceTransformer.preprocess``), one thread at a time."""
    with TOKENIZER_LOCK:
        return model.preprocess(texts)
