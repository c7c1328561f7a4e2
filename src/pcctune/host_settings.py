"""What pcctune may change in the process that runs it: speed settings on for its commands, off for the Python API.

Three settings make encoding on a CPU faster (their measured effect: ``docs/speed-settings.md``), and each one
reaches beyond the call that uses it:

- ``workers``: batches side by side in worker threads, one core each (``pcctune.modeling.cpu_workers``);
- ``onednn``: a model's float32 linear layers routed through oneDNN for the call by changing their class
  (``pcctune.modeling.onednn``), which other code using the same model at the same time sees;
- ``keep_freed_memory``: glibc's allocator told to keep freed memory (``pcctune.modeling.cpu_memory``), for the
  whole process and for good.

The ``pcctune`` command, ``python -m reproductions`` and the scripts in ``benchmarks/`` turn on those measured
fastest on the CPU's kind (``command_line``): a setting that pays on one kind costs on another (oneDNN's kernel was
the slowest choice on the AVX2-only EPYC and the largest gain on the Zen 5 EPYC), and the model name alone says
"AMD EPYC" for both, so the kind is told by vendor, family, model and flags (``MEASURED_KINDS``,
``pcctune.cpu_kind``). A CPU of no measured kind gets ``UNMEASURED``. The choice is logged once, with why. A program
that imports pcctune gets none of them unless it asks: ``with pcctune.cpu_speedups():`` around its calls (all
three), ``PCCTUNE_CPU_SPEEDUPS`` in its environment, or ``pcctune.evaluate(model, workers=N)`` for the workers
alone. The choice holds in the context that makes it (``contextvars``): another thread keeps its own.

``PCCTUNE_CPU_SPEEDUPS`` also chooses for the command line, where it is set: ``1`` all three, ``0`` none, or the
names of those wanted, comma-separated (``workers,onednn``: all but the allocator's).

This module imports nothing heavy, so the command line can turn the settings on before it knows its command.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import cache
from typing import NamedTuple

from pcctune.cpu_kind import CPUKind, this_cpu
from pcctune.errors import PcctuneError

logger = logging.getLogger(__name__)

SPEEDUPS_ENV = "PCCTUNE_CPU_SPEEDUPS"


@dataclass(frozen=True)
class HostSettings:
    """The speed settings pcctune's CPU encoding uses (each field: the module docstring's list)."""

    workers: int | None = 1
    """Worker threads for CPU encoding; ``None``: torch's thread count, capped
    (``MAX_AUTO_WORKERS``)."""
    onednn: bool = False
    keep_freed_memory: bool = False

    def said(self) -> str:
        """The settings on, in words: ``workers alone``, ``workers, onednn, keep_freed_memory``, ``none``."""
        on = [name for name in ("onednn", "keep_freed_memory") if getattr(self, name)]
        on = ["workers", *on] if self.workers != 1 else on
        return "none" if not on else f"{on[0]} alone" if len(on) == 1 else ", ".join(on)


LIBRARY_DEFAULT = HostSettings()
"""The Python API's: one thread (the caller's), torch's own kernels, the allocator as the process set it."""
SPEEDUPS = HostSettings(workers=None, onednn=True, keep_freed_memory=True)
"""All three (``PCCTUNE_CPU_SPEEDUPS=1``, ``cpu_speedups``)."""
WORKERS = HostSettings(workers=None)
"""The worker threads alone."""


@dataclass(frozen=True)
class MeasuredKind:
    """A kind of CPU the settings were measured on, and the settings measured fastest there. A CPU is of the kind
    when its vendor and family are the kind's, its model one of ``models`` (any where none are named), and it has
    every flag of ``has`` and none of ``lacks`` (``/proc/cpuinfo``'s names)."""

    name: str
    vendor: str
    families: tuple[int, ...]
    settings: HostSettings
    measured: str
    """What the choice rests on: ``pcctune eval all-MiniLM-L6-v2 --tasks sts`` in whole processes, alternating, with
    each setting alone, all three and none (``PCCTUNE_CPU_SPEEDUPS``), and where the record is."""
    has: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    models: tuple[int, ...] = ()

    def matches(self, cpu: CPUKind) -> bool:
        """Whether ``cpu`` is of this kind: its vendor, one of its families (and models, where listed), the flags
        it must have and lack."""
        return (
            cpu.vendor == self.vendor
            and cpu.family in self.families
            and (not self.models or cpu.model in self.models)
            and set(self.has) <= cpu.flags
            and not set(self.lacks) & cpu.flags
        )


MEASURED_KINDS = (
    MeasuredKind(
        "AVX2-only EPYC (Zen 2/3)",
        "AuthenticAMD",
        (23, 25),
        WORKERS,
        "workers alone 76.5 s, none 81.7 s, kept memory alone 83.1 s, all three 84.5 s, oneDNN alone 90.7 s "
        "(2 cores; benchmarks/results/speed/README.md, section 7)",
        has=("avx2",),
        lacks=("avx512f",),
    ),
    MeasuredKind(
        "Zen 5 EPYC",
        "AuthenticAMD",
        (26,),
        SPEEDUPS,
        "all three 30.8 s, oneDNN alone 35.1 s, none 52.3 s, workers alone 52.4 s "
        "(2 cores, no AMX; benchmarks/results/speed/README.md, section 11)",
        has=("avx512_bf16",),
    ),
    MeasuredKind(
        "Zen 4 EPYC",
        "AuthenticAMD",
        (25,),
        SPEEDUPS,
        "all three 67.1 s, kept memory alone 72.0 s, none 74.2 s, workers alone 74.7 s, oneDNN alone 75.6 s; all three "
        "ahead of none in 3 of 4 rounds, a paired interval holding 0 "
        "(2 cores, family 25 model 17; benchmarks/results/speed/README.md, section 18)",
        has=("avx512f",),
    ),
    MeasuredKind(
        "AVX-512 Xeon without AMX",
        "GenuineIntel",
        (6,),
        WORKERS,
        "workers alone 53.8 s, all three 55.4 s, none 57.9 s, oneDNN alone 58.9 s, kept memory alone 64.4 s "
        "(2 cores, family 6 model 207; benchmarks/results/speed/README.md, section 8)",
        has=("avx512f",),
        lacks=("amx_tile",),
    ),
)
"""The kinds measured, each with the settings measured fastest there. Zen 4 (AMD family 25 with AVX-512) is a kind of
its own: Zen 5's flags at half its AVX-512 rate, the AVX2-only EPYC's family."""

UNMEASURED = WORKERS
"""A CPU of no measured kind: the worker threads alone, the one choice within 1 % of none or faster on every measured
kind (76.5 s against 81.7 s on the AVX2-only EPYC; 53.8 s against 57.9 s on the AVX-512 Xeon; 52.4 s against 52.3 s
on the Zen 5 EPYC; 74.7 s against 74.2 s on the Zen 4 EPYC), where oneDNN's kernel, the kept memory and all three
cost time on the AVX2-only EPYC. A Xeon with AMX is unmeasured: its tile unit may change which kernels win."""


class Choice(NamedTuple):
    """The command line's settings and the line that says why."""

    settings: HostSettings
    why: str


def measured_kind(cpu: CPUKind | None = None) -> MeasuredKind | None:
    """The measured kind ``cpu`` (this machine's by default) is of (``MEASURED_KINDS``), or ``None``."""
    cpu = cpu or this_cpu()
    return next((kind for kind in MEASURED_KINDS if kind.matches(cpu)), None)


def command_line_choice(cpu: CPUKind | None = None) -> Choice:
    """The ``pcctune`` command's settings on ``cpu`` (this machine's by default): those ``PCCTUNE_CPU_SPEEDUPS``
    names where it is set, else those measured fastest on the CPU's kind (``MEASURED_KINDS``), else ``UNMEASURED``."""
    asked = os.environ.get(SPEEDUPS_ENV, "").strip()
    if asked:
        settings = from_environment(LIBRARY_DEFAULT)
        return Choice(settings, f"CPU speed settings: {settings.said()} ({SPEEDUPS_ENV}={asked})")
    cpu = cpu or this_cpu()
    kind = measured_kind(cpu)
    if kind is not None:
        return Choice(kind.settings, f"CPU kind {kind.name}: {kind.settings.said()} (measured fastest on this kind)")
    return Choice(
        UNMEASURED,
        f"unmeasured CPU kind ({cpu.vendor} family {cpu.family} model {cpu.model}): {UNMEASURED.said()} "
        "(within 1 % of none or faster on every measured kind)",
    )


def command_line() -> HostSettings:
    """The settings of the ``pcctune`` command, ``python -m reproductions`` and the benchmarks
    (``command_line_choice``); which and why is logged once per process."""
    settings, why = command_line_choice()
    _log_once(why)
    return settings


def settings_line() -> str:
    """The CPU speed settings in force here and why, for a record: the command line's line where they are its
    choice (``command_line_choice``), else the settings and that the caller chose them."""
    settings, why = host_settings(), command_line_choice()
    return why.why if settings == why.settings else f"CPU speed settings: {settings.said()} (chosen by the caller)"


def record_settings() -> dict[str, str | int]:
    """What a record says of the process that computed it: the CPU speed settings and why (``settings_line``) and
    torch's intra-op thread count (``cpu_settings`` and ``torch_threads`` of an eval or run record)."""
    import torch

    return {"cpu_settings": settings_line(), "torch_threads": torch.get_num_threads()}


@cache
def _log_once(line: str) -> None:
    logger.info(line)


_CHOSEN: ContextVar[HostSettings | None] = ContextVar("pcctune_host_settings", default=None)


def host_settings() -> HostSettings:
    """The settings in force here: the innermost ``using`` block's, else those ``PCCTUNE_CPU_SPEEDUPS`` names
    (``from_environment``), else ``LIBRARY_DEFAULT``."""
    chosen = _CHOSEN.get()
    if chosen is not None:
        return chosen
    return from_environment(LIBRARY_DEFAULT)


def from_environment(default: HostSettings) -> HostSettings:
    """The settings ``PCCTUNE_CPU_SPEEDUPS`` names: ``1`` (or ``all``) ``SPEEDUPS``, ``0`` ``LIBRARY_DEFAULT``, a
    comma-separated list of field names those of ``SPEEDUPS`` and the rest off; unset or empty: ``default``."""
    value = os.environ.get(SPEEDUPS_ENV, "").strip().lower()
    if value == "":
        return default
    if value == "0":
        return LIBRARY_DEFAULT
    if value in ("1", "all"):
        return SPEEDUPS
    names = {name.strip() for name in value.split(",") if name.strip()}
    unknown = names - set(HostSettings.__dataclass_fields__)
    if unknown:
        raise PcctuneError(
            f"{SPEEDUPS_ENV}={value!r}: no setting {', '.join(sorted(unknown))}; use 1, 0 or names of "
            f"{', '.join(HostSettings.__dataclass_fields__)}"
        )
    return replace(LIBRARY_DEFAULT, **{name: getattr(SPEEDUPS, name) for name in names})


@contextmanager
def using(settings: HostSettings) -> Iterator[HostSettings]:
    """``settings`` in force for the block, in this context (and the worker threads it starts)."""
    if settings.workers is not None and settings.workers < 1:
        raise PcctuneError(f"workers must be at least 1 (got {settings.workers})")
    token = _CHOSEN.set(settings)
    try:
        yield settings
    finally:
        _CHOSEN.reset(token)


def cpu_speedups(workers: int | None = None) -> AbstractContextManager[HostSettings]:
    """All three speed settings on for the block (``workers``: how many worker threads; by default torch's thread
    count, capped); the ``pcctune`` command turns on those measured fastest on the CPU's kind (``command_line``):

        with pcctune.cpu_speedups():
            print(pcctune.evaluate(model).sts["avg"])
    """
    return using(replace(SPEEDUPS, workers=workers))


def with_workers(workers: int | None) -> AbstractContextManager[HostSettings]:
    """The settings in force, with ``workers`` worker threads where it is given (``None``: unchanged)."""
    current = host_settings()
    return using(current if workers is None else replace(current, workers=workers))
