"""Inference batches run side by side on a CPU's cores, one thread each, instead of one batch at a time on all.

torch runs one batch on all cores by splitting each operation among its OpenMP threads, which meet at the end of
every operation; between operations (Python, the tokenizer, pooling) one thread works and the others wait. On a
2-core AVX2-only AMD EPYC, encoding 6,000 STS sentences with all-MiniLM-L6-v2 took 24.2 s and 23.5 s that way,
19.2 s and 19.8 s with two batches at once, one thread each (``benchmarks/results/speed``): the kernels are the
same, so are the vectors (equal to the bit there). torch releases the GIL inside its operations and the
tokenizers inside theirs, so Python threads suffice.

``cpu_workers`` gives the number of such workers for a model: the number asked (``workers`` of
``HostSettings``, one unless the ``pcctune`` command or the caller asks for more) or,
asked for "as many as the machine has", torch's thread count on CPU (what the user or the machine set, e.g.
``OMP_NUM_THREADS``) up to ``MAX_AUTO_WORKERS``; one on an accelerator or for a model whose backbone runs in
another runtime (ONNX Runtime, OpenVINO) that has threads of its own. ``map_in_workers`` runs a function over
the batches in that many threads and yields the results in order, so the caller keeps its progress bar and its
order-dependent work (a vector store) in its own thread.

**Nothing process-wide changes.** ``torch.set_num_threads`` would set the count for every thread that touches
torch for the first time afterwards (a server's request thread started meanwhile would stay on one thread for
good). A worker instead sets only its own thread's count, with the per-thread setters of the OpenMP runtime and of
MKL that torch is built with (``omp_set_num_threads``, ``MKL_Set_Num_Threads_Local``); where torch's OpenMP runtime
cannot be reached that way (a build without OpenMP, Windows), encoding runs in the caller's thread.

**Their memory.** glibc gives each thread a heap of its own and keeps an ended thread's heap resident, so what the
workers freed would stay in the process beside what the caller allocates next (in a training run, 0.5 GB more at
its peak, ``benchmarks/results/speed``). Encoding hands those free pages back when the call ends
(``cpu_memory.release_freed_memory``), unless the settings in force keep freed memory on purpose.

**Ctrl-C.** When the caller stops (an interrupt, an error, a consumer that stops early), the batches not begun are
dropped and the running ones stop at the next module of ``stoppable`` they enter (a forward pre-hook, there only
while the workers run) instead of running to their end, which is minutes for a one-core batch of a large model.

**Tokenizers.** A fast tokenizer's truncation and padding settings are mutable state in Rust: two threads that
tokenize at once with different settings fail with "Already borrowed". pcctune tokenizes under
``tokenizer_lock`` (one per tokenizer); a program that tokenizes or encodes with the same model in its own
threads while pcctune encodes holds the same lock around those calls (not around pcctune's own, whose workers take
it).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar, copy_context
from functools import cache
from pathlib import Path
from threading import Event, Lock, RLock
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

import torch
from torch import nn

from pcctune.modeling.backends import RuntimeBackbone

Batch = TypeVar("Batch")
Result = TypeVar("Result")

MAX_AUTO_WORKERS = 8
"""At most this many workers unless asked for more: each holds a batch's activations, and they tokenize one at a
time; the gain was measured on 2 cores only."""

ThreadCountSetter = Callable[[int], int]


def cpu_workers(model: nn.Module, asked: int | None) -> int:
    """How many batches to run at once: one for a model on an accelerator or in another runtime; else ``asked``,
    or (``None``) torch's thread count up to ``MAX_AUTO_WORKERS``."""
    device = next(model.parameters(), torch.empty(0)).device
    if device.type != "cpu" or any(isinstance(module, RuntimeBackbone) for module in model.modules()):
        return 1
    return max(1, asked if asked is not None else min(torch.get_num_threads(), MAX_AUTO_WORKERS))


@cache
def _thread_count_setters() -> tuple[ThreadCountSetter, ...]:
    """The setters of the calling thread's own count in the OpenMP runtime and MKL that torch links (found through
    ``libtorch_cpu``, whose dependencies they are); empty where torch's OpenMP runtime cannot be reached so."""
    library = next((Path(torch.__file__).parent / "lib").glob("*torch_cpu.*"), None)
    if library is None or not torch.backends.openmp.is_available():
        return ()
    try:
        handle = ctypes.CDLL(str(library))
    except OSError:
        return ()
    openmp, mkl = (getattr(handle, name, None) for name in ("omp_set_num_threads", "MKL_Set_Num_Threads_Local"))
    return () if openmp is None else tuple(setter for setter in (openmp, mkl) if setter is not None)


def _one_torch_thread(setters: tuple[ThreadCountSetter, ...]) -> None:
    """Run this thread's torch operations on one thread, leaving the count of every other thread as it is."""
    torch.get_num_threads()  # torch's own first-use setup of this thread, which would undo the setters' work
    for setter in setters:
        setter(1)


class WorkersStopped(Exception):  # noqa: N818  (a stop, not an error)
    """Raised inside a running batch when the caller of ``map_in_workers`` has stopped."""


_STOP: ContextVar[Event | None] = ContextVar("pcctune_workers_stop", default=None)


def stop_requested() -> bool:
    """True inside a worker's batch once the caller of ``map_in_workers`` has stopped (a batch function that
    runs long outside any module may return or raise then); False anywhere else."""
    stop = _STOP.get()
    return stop is not None and stop.is_set()


def _stop_point(*_: Any) -> None:
    """A module's forward pre-hook: raise ``WorkersStopped`` in a worker whose map was stopped (elsewhere, e.g.
    in another thread using the same model meanwhile, nothing)."""
    if stop_requested():
        raise WorkersStopped


def _when_all_done(futures: list[Future[Any]], then: Callable[[], None]) -> None:
    """Call ``then`` once every one of ``futures`` is done or cancelled: now if they are, else in the thread that
    ends the last one."""
    left, lock = [len(futures)], Lock()

    def one_done(_: Future[Any]) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            then()

    if not futures:
        then()
    for future in futures:
        future.add_done_callback(one_done)


def _hand_over_finished(submitted: list[tuple[Batch, Future[Result]]], keep: Callable[[Batch, Result], None]) -> None:
    """Every batch of ``submitted`` that ran to its end (not cancelled, not stopped), with its result, to ``keep``."""
    for batch, future in submitted:
        if not future.cancelled() and future.exception() is None:
            keep(batch, future.result())


def map_in_workers(
    function: Callable[[Batch], Result],
    batches: Iterable[Batch],
    workers: int,
    stoppable: nn.Module | None = None,
    keep_finished: Callable[[Batch, Result], None] | None = None,
) -> Generator[Result]:
    """``map(function, batches)`` in inference mode, over ``workers`` threads of one torch thread each (in this
    thread, unchanged, when ``workers`` is 1 or threads cannot have their own count); results come in the order of
    ``batches``. Stopped early, running batches stop at the next module of ``stoppable`` they enter, and the batches
    that had finished but were not handed out yet go to ``keep_finished`` (a resume store: no finished work lost)."""

    def run(batch: Batch) -> Result:
        with torch.inference_mode():
            return function(batch)

    setters = _thread_count_setters()
    if workers <= 1 or not setters:
        yield from map(run, batches)
        return
    stop = Event()

    def run_in_worker(batch: Batch) -> Result:
        _STOP.set(stop)  # in this batch's own copy of the caller's context
        return run(batch)

    hooks = [module.register_forward_pre_hook(_stop_point) for module in stoppable.modules()] if stoppable else []

    def remove_hooks() -> None:
        for hook in hooks:
            hook.remove()

    pool = ThreadPoolExecutor(workers, "pcctune-encode", initializer=_one_torch_thread, initargs=(setters,))
    submitted: list[tuple[Batch, Future[Result]]] = []
    handed_out = 0
    try:  # each batch in a copy of the caller's context: its scopes (e.g. oneDNN's frozen weights) hold there too
        for batch in batches:
            submitted.append((batch, pool.submit(copy_context().run, run_in_worker, batch)))
        for _, future in submitted:
            yield future.result()
            handed_out += 1
    finally:  # also stopped early (an error, Ctrl-C, a consumer that closes the generator)
        pool.shutdown(wait=False, cancel_futures=True)  # the batches not begun are dropped
        stop.set()  # the running ones stop at their next module
        futures = [future for _, future in submitted]
        _when_all_done(futures, remove_hooks)  # by the last worker to stop, if the caller does not wait for it
        pool.shutdown(wait=True)  # a moment; a second Ctrl-C leaves the workers to stop by themselves
        if keep_finished is not None:
            _hand_over_finished(submitted[handed_out:], keep_finished)


_TOKENIZER_LOCKS: WeakKeyDictionary[Any, RLock] = WeakKeyDictionary()
_TOKENIZER_LOCKS_LOCK = Lock()


def tokenizer_lock(model: Any) -> RLock:
    """The lock pcctune holds while it tokenizes with ``model``'s tokenizer (one lock per tokenizer object).

    Hold it in your own threads around calls that tokenize with the same model (``model.encode``,
    ``model.tokenize``) while pcctune encodes with it, not around pcctune's calls:

        with pcctune.tokenizer_lock(model):
            vectors = model.encode(sentences)
    """
    tokenizer = getattr(model, "tokenizer", None)
    owner = model if tokenizer is None else tokenizer
    with _TOKENIZER_LOCKS_LOCK:
        lock = _TOKENIZER_LOCKS.get(owner)
        if lock is None:
            lock = _TOKENIZER_LOCKS[owner] = RLock()
        return lock


def tokenized(model: Any, texts: list[str], prompt: str | None = None) -> dict[str, Any]:
    """The model's input features of ``texts`` under ``prompt`` (``SentenceTransformer.preprocess``, which applies it
    as ``encode`` does), under ``tokenizer_lock``."""
    with tokenizer_lock(model):
        return model.preprocess(texts, prompt=prompt)
