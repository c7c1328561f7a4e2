"""What pcctune may change in the process that runs it: speed settings on for its commands, off for the Python API.

Three settings make encoding on a CPU faster (their measured effect: ``docs/speed-settings.md``), and each one
reaches beyond the call that uses it:

- ``workers``: batches side by side in worker threads, one core each (``pcctune.modeling.cpu_workers``);
- ``onednn``: a model's float32 linear layers routed through oneDNN for the call by changing their class
  (``pcctune.modeling.onednn``), which other code using the same model at the same time sees;
- ``keep_freed_memory``: glibc's allocator told to keep freed memory (``pcctune.modeling.cpu_memory``), for the
  whole process and for good.

The ``pcctune`` command, ``python -m reproductions`` and the scripts in ``benchmarks/`` turn the workers on
(``COMMAND_LINE``): measured on the 2-core AVX2-only EPYC, the other two cost memory and time there. A program that
imports pcctune gets none of them unless it asks: ``with pcctune.cpu_speedups():`` around its calls (all three),
``PCCTUNE_CPU_SPEEDUPS`` in its environment, or ``pcctune.evaluate(model, workers=N)`` for the workers alone. The
choice holds in the context that makes it (``contextvars``): another thread keeps its own.

``PCCTUNE_CPU_SPEEDUPS`` also chooses for the command line, where it is set: ``1`` all three, ``0`` none, or the
names of those wanted, comma-separated (``workers,onednn``: all but the allocator's).

This module imports nothing heavy, so the command line can turn the settings on before it knows its command.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from pcctune.errors import PcctuneError

SPEEDUPS_ENV = "PCCTUNE_CPU_SPEEDUPS"


@dataclass(frozen=True)
class HostSettings:
    """The speed settings pcctune's CPU encoding uses (each field: the module docstring's list)."""

    workers: int | None = 1
    """Worker threads for CPU encoding; ``None``: torch's thread count, capped
    (``MAX_AUTO_WORKERS``)."""
    onednn: bool = False
    keep_freed_memory: bool = False


LIBRARY_DEFAULT = HostSettings()
"""The Python API's: one thread (the caller's), torch's own kernels, the allocator as the process set it."""
SPEEDUPS = HostSettings(workers=None, onednn=True, keep_freed_memory=True)
"""All three (``PCCTUNE_CPU_SPEEDUPS=1``, ``cpu_speedups``)."""
COMMAND_LINE = HostSettings(workers=None)
"""The command line's: the worker threads alone. ``pcctune eval all-MiniLM-L6-v2 --tasks sts`` on the 2-core
AVX2-only EPYC ran faster with them than with none and slower with all three, whose oneDNN kernel and kept memory
added 0.2-0.3 GB (``benchmarks/results/speed/README.md``)."""

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
    count, capped); the ``pcctune`` command turns on the workers alone (``COMMAND_LINE``):

        with pcctune.cpu_speedups():
            print(pcctune.evaluate(model).sts["avg"])
    """
    return using(replace(SPEEDUPS, workers=workers))


def with_workers(workers: int | None) -> AbstractContextManager[HostSettings]:
    """The settings in force, with ``workers`` worker threads where it is given (``None``: unchanged)."""
    current = host_settings()
    return using(current if workers is None else replace(current, workers=workers))
