"""Notices other libraries print that say nothing to a pcctune user, dropped while pcctune's own code runs.

On CPUs with AVX512-BF16, bitsandbytes (0.50) tries to fetch a fused 4-bit kernel from the Hub (the ``kernels``
package) when it is imported, which peft does and, through it, transformers and sentence-transformers, and logs
a warning when it cannot. It then uses its own CPU kernel (the one the QLoRA tests run). The notice comes once, at
that import: dropped while pcctune imports its layers, it is never printed, and the logger is left as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

BITSANDBYTES_KERNEL_NOTICE = "Failed to load CPU gemm_4bit_forward"
BITSANDBYTES_CPU_LOGGER = "bitsandbytes.backends.cpu.ops"


def _not_kernel_notice(record: logging.LogRecord) -> bool:
    """False for bitsandbytes' missing-kernel notice alone: every other record of its logger passes."""
    return not record.getMessage().startswith(BITSANDBYTES_KERNEL_NOTICE)


@contextmanager
def known_noise_dropped() -> Iterator[None]:
    """Drop bitsandbytes' missing-kernel notice inside the block; its logger has its own filters back after."""
    logger = logging.getLogger(BITSANDBYTES_CPU_LOGGER)
    logger.addFilter(_not_kernel_notice)
    try:
        yield
    finally:
        logger.removeFilter(_not_kernel_notice)
