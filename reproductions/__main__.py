"""Run, continue or summarize the reproductions of the papers' claims: ``python -m reproductions CLAIM …``.

    python -m reproductions --list                    # every claim and its tables
    python -m reproductions templates                 # its committed table again, from its records
    python -m reproductions templates --rerun         # measure: runs with a record are kept, the rest runs
    python -m reproductions all --quick               # every claim on tiny random models (CI; minutes on 2 cores)
    python -m reproductions all --summarize           # every committed table again, from its records alone
    python -m reproductions dcpcse -- --help          # flags after ``--`` go to the claim's script

A claim is a folder ``reproductions/<claim>/`` holding ``<claim>.py``; a script that defines ``TABLES`` (a
sub-folder → the script's flags for it) has one table per entry, otherwise one table in its folder. A table
whose record (``runs.json``) is committed is done: running the claim again only redraws it, unless ``--rerun``
measures it again (the script then keeps every run it holds a record of). ``--output`` writes elsewhere (the
records are still read from the claim's folder under ``--summarize``).

Claims run as the ``pcctune`` command does, with its CPU speed settings on (worker threads, oneDNN's kernel, glibc
keeping freed memory: docs/speed-settings.md), also where a script calls the Python API.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from benchmarks._common import run

HERE = Path(__file__).resolve().parent


def claims() -> list[str]:
    """Every claim folder that follows the shape: ``<claim>/<claim>.py`` defining the claim's ``BENCHMARK``."""
    scripts = sorted(p for p in HERE.glob("*/*.py") if p.stem == p.parent.name)
    return [p.stem for p in scripts if "\nBENCHMARK = " in p.read_text(encoding="utf-8")]


def script(name: str) -> ModuleType:
    return importlib.import_module(f"reproductions.{name}.{name}")


def tables(module: ModuleType) -> dict[str, list[str]]:
    """Sub-folder → flags of each table a claim's script makes ('' is the claim's folder itself)."""
    return dict(getattr(module, "TABLES", {"": []}))


def run_claim(name: str, args: argparse.Namespace, extra: list[str]) -> None:
    """Run (what is missing), quick-run or summarize every table of one claim."""
    module = script(name)
    folder = HERE / name
    prog = f"python -m reproductions {name} --"
    for sub, flags in tables(module).items():
        if args.quick and sub:  # --quick runs each script's code paths once, on its main table's flags
            continue
        out = (args.output / name / sub) if args.output else folder / sub
        done = (folder / sub / "runs.json").is_file() and not args.rerun
        if args.quick:
            run(module.BENCHMARK, [*flags, "--quick", "--output", str(out), *extra], prog)
        elif args.summarize and not (folder / sub / "runs.json").is_file():
            print(f"{name}/{sub or '.'}: no record yet, nothing to summarize")
        elif args.summarize or done:
            if not args.summarize:
                print(f"{name}/{sub or '.'}: done (its record is committed); its table again")
            summarize = ["--summarize", "--records-from", str(folder / sub), "--output", str(out)]
            run(module.BENCHMARK, [*flags, *summarize, *extra], prog)
        else:
            run(module.BENCHMARK, [*flags, "--output", str(out), *extra], prog)


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The runner's flags, and the script's flags (those after ``--``); a claim that is not one, or two ways of
    running at once (``--quick``, ``--summarize``, ``--rerun``), is refused with argparse's usage line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    known, (first, _, rest) = claims(), str(__doc__).partition("\n")
    parser = argparse.ArgumentParser(
        prog="python -m reproductions",
        description=first,
        epilog=rest.strip("\n"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("claims", nargs="*", help=f"'all' or any of: {', '.join(known)}")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--quick", action="store_true", help="every code path on tiny random models (CI)")
    how.add_argument("--summarize", action="store_true", help="only rebuild the tables from the records")
    how.add_argument("--rerun", action="store_true", help="measure a table again though its record exists")
    parser.add_argument("--output", type=Path, default=None, help="write here instead of the claims' folders")
    parser.add_argument("--list", action="store_true", help="list the claims and their tables")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.claims) - {*known, "all"})
    if unknown:
        parser.error(f"unknown claim {', '.join(map(repr, unknown))}; choose from all, {', '.join(known)}")
    if "all" in args.claims and len(args.claims) > 1:
        parser.error("'all' runs every claim: name no other claim beside it")
    return args, extra


def main(argv: list[str] | None = None) -> None:
    args, extra = parse(argv)
    if args.list or not args.claims:
        for name in claims():
            subs = [sub or "." for sub in tables(script(name))]
            print(f"{name}: {', '.join(subs)}")
        return
    names = claims() if args.claims == ["all"] else args.claims
    if args.quick and args.output is None:
        args.output = Path(tempfile.mkdtemp(prefix="reproductions-quick-"))
    for name in names:
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        run_claim(name, args, extra)
        print(f"== {name}: {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
