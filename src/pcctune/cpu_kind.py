"""Which CPU this is: vendor, family, model, name and feature flags, read once from ``/proc/cpuinfo``.

The model name alone does not tell CPU kinds apart: "AMD EPYC" names both a Zen 2/3 part with AVX2 only and a
Zen 5 part with AVX-512 and AVX512_BF16, whose kernels (and so whose float rounding and speed) differ. A record, a
cache key or a speed setting that depends on the CPU names it by ``CPUKind.identity``: vendor, family, model and
the flags that decide which kernels run.

This module imports nothing heavy: the command line reads it before it knows its command.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")

KERNEL_FLAGS = frozenset(
    {
        "avx",
        "avx2",
        "fma",
        "f16c",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512dq",
        "avx512_vnni",
        "avx512_bf16",
        "avx512_fp16",
        "avx_vnni",
        "amx_tile",
        "amx_bf16",
        "amx_int8",
        "asimd",
        "sve",
        "sve2",
        "bf16",
        "i8mm",
    }
)
"""Feature flags that change which matrix kernels torch and oneDNN pick (x86: AVX to AMX; Arm: NEON to SVE, bf16)."""


@dataclass(frozen=True)
class CPUKind:
    """One CPU as ``/proc/cpuinfo`` describes its first processor."""

    vendor: str
    """``GenuineIntel``, ``AuthenticAMD``, an Arm implementer code, or ``unknown``."""
    family: int | None
    model: int | None
    name: str
    flags: frozenset[str]

    @property
    def kernel_flags(self) -> list[str]:
        """The flags of ``KERNEL_FLAGS`` this CPU has, sorted."""
        return sorted(self.flags & KERNEL_FLAGS)

    @property
    def identity(self) -> str:
        """Vendor, family, model and kernel flags in one line: what a record or a cache key names the CPU by."""
        return (
            f"{self.vendor} family {self.family} model {self.model} ({self.name}); "
            f"flags: {' '.join(self.kernel_flags) or 'none known'}"
        )


def parse_cpuinfo(text: str) -> CPUKind:
    """The ``CPUKind`` of the first processor a ``/proc/cpuinfo`` text describes (x86 or Arm field names)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block ends
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    vendor = fields.get("vendor_id") or fields.get("CPU implementer") or "unknown"
    family = fields.get("cpu family") or fields.get("CPU architecture")
    model = fields.get("model") or fields.get("CPU part")
    return CPUKind(
        vendor=vendor,
        family=_number(family),
        model=_number(model),
        name=fields.get("model name") or platform.processor() or "unknown",
        flags=frozenset((fields.get("flags") or fields.get("Features") or "").split()),
    )


def _number(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return None


def read_cpu_kind(cpuinfo: Path = CPUINFO) -> CPUKind | None:
    """The CPU ``cpuinfo`` describes; ``None`` where it cannot be read (another OS)."""
    try:
        return parse_cpuinfo(cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


@cache
def this_cpu() -> CPUKind:
    """This machine's CPU, read once per process (a CPU of unreadable kind: vendor ``unknown``, no flags)."""
    return read_cpu_kind() or CPUKind("unknown", None, None, platform.processor() or "unknown", frozenset())
