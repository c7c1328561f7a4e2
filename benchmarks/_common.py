"""The one pattern every script in ``benchmarks/`` and ``reproductions/`` follows, and what they share.

A script is its docstring (the ``--help`` text), a :class:`Benchmark`, and ``run(BENCHMARK)``. ``arguments`` adds its
own flags to the shared ``--data`` (the SentEval folder), ``--output``, ``--summarize`` (only redraw the table of
``OUTPUT/runs.json``) and ``--quick``: a tiny random BERT, a tiny random Llama and a miniature SentEval folder
(:mod:`pcctune.testing`), which the script's ``quick`` values name ``{bert}``, ``{llama}`` and ``{senteval}`` (a script
that only reads what others ran makes tiny inputs in ``prepare_quick``): every code path in seconds, offline, as CI
runs it. ``measure`` returns the rows (dicts: one key names the row, ``sts`` holds its scores, the rest are details)
with the settings that made them, saved as a typed :class:`~pcctune.results.BenchmarkResult` (``runs.json``);
``table`` renders the record read back from disk, printed and saved as ``table.md`` (``plot`` draws ``<name>.png``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pcctune.data.tasks import SEVEN_TASKS
from pcctune.errors import PcctuneError
from pcctune.host_settings import command_line, using
from pcctune.io import check_output_folder, write_text
from pcctune.provenance import library_versions
from pcctune.results import BenchmarkResult, BenchmarkRow
from pcctune.testing import TinyWorkspace, tiny_workspace

STS_COLUMNS = [*SEVEN_TASKS, "avg"]
ROOT = Path(__file__).resolve().parents[1]
Rows = list[dict[str, Any]]


class Measured(NamedTuple):
    """What a benchmark's ``measure`` returns: its rows, the settings that made them, and extra details."""

    rows: Rows
    settings: str
    details: dict[str, Any] = {}


@dataclass(frozen=True)
class Benchmark:
    """One benchmark script: its name, flags, quick budget, measurement and table."""

    name: str
    doc: str
    measure: Callable[[argparse.Namespace], Measured]
    table: Callable[[Rows, dict[str, Any]], str]
    arguments: Callable[[argparse.ArgumentParser], None]
    quick: Mapping[str, Any] = field(default_factory=dict)
    label_key: str = "label"
    output: str = ""
    plot: Callable[[Rows, dict[str, Any], Path], object] | None = None
    prepare_quick: Callable[[argparse.Namespace, TinyWorkspace], None] | None = None
    """For a script that reads what others ran (sweep folders, queue records): make tiny inputs under --quick."""

    @classmethod
    def of(cls, module_name: str, **settings: Any) -> Benchmark:
        """The benchmark a script defines: its file name, docstring, ``measure``, ``table`` and ``arguments``."""
        module = sys.modules[module_name]
        name = Path(str(module.__file__)).stem
        parts = (module.measure, module.table, module.arguments)
        return cls(name, str(module.__doc__), *parts, **settings)


class Ran(NamedTuple):
    """A finished process: wall seconds, CPU seconds (user + sys, every thread), peak resident memory (MB) and the
    last line it printed."""

    seconds: float
    cpu_s: float
    peak_mb: float
    last: str


def run_measured(args: list[str], env: Mapping[str, str] | None = None) -> Ran:
    """Run ``python ARGS`` in a fresh process (offline, ``env`` added to the environment). Its CPU time and peak
    memory are the kernel's account of that process alone (``os.wait4``), not the largest of all children so far."""
    offline = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([sys.executable, *args], stdout=out, stderr=err, cwd=ROOT, env=offline)
        _, status, usage = os.wait4(process.pid, 0)
        seconds, process.returncode = time.perf_counter() - started, os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed:\n{err.read()[-3000:]}")
        last = out.read().strip().splitlines()[-1]
    return Ran(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, last)


def cell(key: str, spec: str, scale: float = 1, missing: str | None = None) -> Callable[[dict], str | None]:
    """A table cell: the row's ``key`` × ``scale`` formatted by ``spec`` (``missing`` where the row has none)."""
    return lambda row: missing if row.get(key) is None else format(row[key] * scale, spec)


def data_flag(args: argparse.Namespace) -> list[str]:
    """``--data FOLDER`` for a subprocess when the run names a SentEval folder."""
    return ["--data", str(args.data)] if args.data else []


def to_record(
    name: str, rows: Rows, label_key: str, settings: str = "", details: dict[str, Any] | None = None
) -> BenchmarkResult:
    """The rows as a typed record: a row's ``label_key`` is its label, its ``sts`` its scores, the rest its details."""
    parts = [(str(row[label_key]), row.get("sts") or {}, {k: v for k, v in row.items() if k != "sts"}) for row in rows]
    kept = [BenchmarkRow(label=label, sts=sts, details=rest) for label, sts, rest in parts]
    return BenchmarkResult(name=name, settings=settings, versions=library_versions(), rows=kept, details=details or {})


def rows_of(record: BenchmarkResult) -> Rows:
    """A record's rows as dicts again (details + ``sts``)."""
    return [{**row.details, **({"sts": row.sts} if row.sts else {})} for row in record.rows]


def save_rows(output: Path, name: str, rows: Rows, label_key: str, settings: str = "", details=None) -> Path:
    """Save the rows measured so far (a resumable script calls this after each row)."""
    return to_record(name, rows, label_key, settings, details).to_disk(output / "runs.json")


def _fill(value: Any, tiny: TinyWorkspace) -> Any:
    """A quick value with ``{bert}``, ``{llama}`` and ``{senteval}`` replaced by the tiny workspace's paths."""
    if isinstance(value, list):
        return [_fill(item, tiny) for item in value]
    if isinstance(value, str):
        return value.format(bert=tiny.bert, llama=tiny.llama, senteval=tiny.senteval)
    return value


def parse(benchmark: Benchmark, argv: list[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    """The script's flags and the shared ones; under ``--quick``, the tiny workspace and quick values. ``prog`` is
    how the usage line names the script where it is not run as itself (``python -m reproductions CLAIM --``)."""
    first, _, rest = benchmark.doc.partition("\n")
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog, description=first, epilog=rest.strip("\n") or None, formatter_class=formatter
    )
    benchmark.arguments(parser)
    parser.add_argument("--data", default=None, help="SentEval folder (default: $PCCTUNE_DATA or ../shared/data)")
    parser.add_argument("--output", type=Path, default=Path(benchmark.output or f"runs/{benchmark.name}"))
    parser.add_argument("--summarize", action="store_true", help="only redraw the table of OUTPUT/runs.json")
    parser.add_argument("--records-from", type=Path, default=None, help="with --summarize: read runs.json here")
    parser.add_argument("--quick", action="store_true", help="seconds on tiny random models (what CI runs)")
    args = parser.parse_args(argv)
    if args.quick:
        scratch = Path(tempfile.mkdtemp(prefix=f"{benchmark.name}-quick-"))
        tiny = tiny_workspace(scratch)
        args.data = str(tiny.senteval)
        for key, value in benchmark.quick.items():
            filled = _fill(value, tiny)
            setattr(args, key, Path(filled) if isinstance(parser.get_default(key), Path) else filled)
        if args.output == parser.get_default("output"):
            args.output = scratch / "out"
        if benchmark.prepare_quick is not None:
            benchmark.prepare_quick(args, tiny)
    return args


def run(benchmark: Benchmark, argv: list[str] | None = None, prog: str | None = None) -> BenchmarkResult:
    """Parse, measure (unless ``--summarize``), save the record, then print and save the table made from it. The
    measurement runs with the CPU speed settings of the ``pcctune`` command (``pcctune.host_settings.command_line``).
    Bad input (an output that cannot be a folder, no record to summarize, missing data) ends it in one line, exit 2."""
    args = parse(benchmark, argv, prog)
    try:
        check_output_folder(args.output)  # before the measurement, which may take hours
        path = (args.records_from if args.summarize and args.records_from else args.output) / "runs.json"
        if args.summarize and not path.is_file():
            raise PcctuneError(f"nothing to summarize: no {path}")
        if not args.summarize:
            with using(command_line()):
                measured = benchmark.measure(args)
            save_rows(
                args.output, benchmark.name, measured.rows, benchmark.label_key, measured.settings, measured.details
            )
        record = BenchmarkResult.from_disk(path)
        rows = rows_of(record)
        text = benchmark.table(rows, record.details) + "\n\n" + record.settings
        print(text)
        write_text(args.output / "table.md", text + "\n")
        if benchmark.plot is not None:
            benchmark.plot(rows, record.details, args.output / f"{benchmark.name}.png")
        return record
    except PcctuneError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
