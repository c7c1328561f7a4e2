"""Whether this CPU computes bf16 natively, and one clear line where a run asks for bf16 on a CPU that does not.

bf16 matrix products are fast on a CPU with AVX512_BF16 (``vdpbf16ps``: twice the float32 FMA rate) or AMX (Intel's
tile unit). Without them, torch and oneDNN convert every bf16 operand to float32 and back around float32 kernels:
the same numbers, more work, so bf16 runs slower than float32 (on an AVX2-only CPU, and on AVX-512 CPUs without
AVX512_BF16). A run that asks for bf16 on such a CPU is told so once, with the faster choice; it goes on, since
bf16 weights also halve the memory a model takes, which can be why it was asked for.

The CPU's features are read from ``/proc/cpuinfo`` (``flags`` on x86, ``Features`` on Arm, whose ``bf16`` is
FEAT_BF16); where they cannot be read (another OS), nothing is said. ``ONEDNN_MAX_CPU_ISA`` set below the bf16
instruction sets (e.g. ``AVX2``, to measure an AVX2-only CPU on a larger one) counts as a CPU without them.
"""

from __future__ import annotations

import logging
import os

from pcctune.cpu_kind import CPUINFO, read_cpu_kind

logger = logging.getLogger(__name__)

NATIVE_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
"""CPU feature flags of native bf16 arithmetic: x86's AVX512_BF16 and AMX-BF16, Arm's FEAT_BF16."""
ISA_LIMIT_ENV = "ONEDNN_MAX_CPU_ISA"


def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (first processor of ``CPUINFO``, ``pcctune.cpu_kind``); ``None`` where they cannot be
    read."""
    kind = read_cpu_kind(CPUINFO)
    return kind.flags if kind is not None and kind.flags else None


def _isa_allows_bf16() -> bool:
    """Whether ``ONEDNN_MAX_CPU_ISA`` (when set) leaves oneDNN its bf16 instruction sets."""
    limit = os.environ.get(ISA_LIMIT_ENV, "").upper()
    return limit in ("", "ALL", "DEFAULT") or "BF16" in limit or "AMX" in limit


def native_bf16() -> bool | None:
    """Whether bf16 runs natively on this CPU (``None``: its features cannot be read)."""
    flags = cpu_flags()
    if flags is None:
        return None
    return bool(flags & NATIVE_FLAGS) and _isa_allows_bf16()


def emulated_bf16_message(what: str) -> str | None:
    """The line for ``what`` (e.g. ``--dtype bf16``) on a CPU without native bf16; ``None`` where it has it, or
    where that cannot be told."""
    if native_bf16() is not False:
        return None
    return (
        f"{what}: this CPU has no native bf16 (neither AVX512_BF16 nor AMX), so bf16 is emulated through float32 "
        "and runs slower than fp32; fp32 is the faster choice here (bf16 still halves the weights' memory)"
    )


def warn_if_emulated_bf16(what: str) -> None:
    """Log ``emulated_bf16_message(what)`` as a warning when it applies."""
    message = emulated_bf16_message(what)
    if message is not None:
        logger.warning(message)
