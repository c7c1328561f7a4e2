"""glibc's allocator told to keep freed memory for the next batch instead of handing it back to the kernel.

A CPU forward pass allocates its activations anew at every layer: a batch of 2,048 tokens through
all-MiniLM-L6-v2's intermediate layer is a 12.6 MB tensor. glibc's ``malloc`` serves blocks that large from fresh
``mmap`` pages or trims its heaps after they are freed, so the next batch touches new pages again: every page
is a kernel fault that zeroes 4 KiB before the GEMM may write it. PyTorch's CPU tuning guide recommends an allocator
that keeps such memory (jemalloc, tcmalloc); ``keep_freed_memory`` gets the same from glibc itself with two
``mallopt`` settings: blocks up to 32 MiB (its largest ``M_MMAP_THRESHOLD`` on 64-bit) come from the heap, and
heaps are trimmed only above 1 GiB of free memory (``M_TRIM_THRESHOLD``).

One ``pcctune eval all-MiniLM-L6-v2 --tasks sts`` on the 2-core AVX2-only AMD EPYC (``benchmarks/results/speed``):
2.5 million page faults and 9.5–10.5 s of kernel time before, 0.7–0.85 million and 4.1–4.2 s after.
The price is memory: the process keeps its peak footprint until it ends, in all its threads, and nothing undoes
the setting. So encoding sets it only where the ``host_settings`` in force say so (the ``pcctune``
command's do, the Python API's do not unless asked). Elsewhere than glibc (macOS, Windows, musl) nothing changes.
"""

from __future__ import annotations

import ctypes
import platform
from functools import cache

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
LARGEST_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's ceiling on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 1024 * 1024 * 1024


def has_glibc() -> bool:
    """True on Linux with glibc, the C library whose ``mallopt`` this module calls."""
    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


@cache
def keep_freed_memory() -> bool:
    """Set glibc's thresholds once per process; True when they were set (False where the C library is not glibc)."""
    if not has_glibc():
        return False
    return _mallopt(M_MMAP_THRESHOLD, LARGEST_MMAP_THRESHOLD) and _mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def release_freed_memory() -> bool:
    """glibc's ``malloc_trim(0)``: the free pages of every heap handed back to the kernel; True when some were.

    Each worker thread of ``pcctune.modeling.cpu_workers`` allocates its batches from a heap of its own (one glibc
    arena per thread), which glibc does not trim when the thread ends: without this, what the workers freed stays
    resident beside what the caller allocates next (a training step after a dev evaluation). The pages are only
    free ones; nothing the process holds changes, and no setting."""
    if not has_glibc():
        return False
    return bool(ctypes.CDLL(None).malloc_trim(0))


def _mallopt(parameter: int, value: int) -> bool:
    """glibc's ``mallopt(parameter, value)``; True when glibc took it."""
    return bool(ctypes.CDLL(None).mallopt(parameter, value))
