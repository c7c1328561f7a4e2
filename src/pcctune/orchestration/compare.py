"""``pcctune compare``: B − A of two sets of training runs (over seeds), or of two models (a paired bootstrap over the
STS test pairs), for every task and the average, each with its 95 % interval and a verdict
(``pcctune.evaluation.compare``; the two models' bootstrap: ``pcctune.orchestration.compare_models``).

A run's score is that of its final stage; a run trained with ``--compare`` has one final stage per loss (its
variants), and the one compared is named (``variant_a``, ``variant_b``). Runs paired by seed are compared over the
seeds both sides ran: the A and B columns are the means over those seeds (so that B − A is their difference) and the
other runs are named as left out."""

from __future__ import annotations

import math
from pathlib import Path

from rich.console import Console

from pcctune.console import plain_console
from pcctune.data.tasks import SHORT_NAMES
from pcctune.errors import PcctuneError
from pcctune.evaluation.compare import paired_seeds, seed_difference
from pcctune.evaluation.interval import RESAMPLES
from pcctune.evaluation.tables import Cell, ScoreTable
from pcctune.io import check_output_file
from pcctune.orchestration.compare_models import compare_models
from pcctune.orchestration.compare_sides import (
    AVERAGE,
    Runs,
    markdown_section,
    model_line,
    named,
    print_section,
    protocol_line,
    read_runs,
    rising_line,
    scored_alike,
    shared_tasks,
    side_files,
    side_line,
    side_scores,
)
from pcctune.provenance import library_versions
from pcctune.results import CompareResult, Difference
from pcctune.seeding import BOOTSTRAP_SEED, check_seed


def compare_runs(
    runs_a: Runs,
    runs_b: Runs,
    task: str | None = None,
    variant_a: str | None = None,
    variant_b: str | None = None,
) -> CompareResult:
    """B − A of two sets of training runs, for every STS task both sides scored (or only ``task``, e.g.
    ``"STSBenchmark"`` or ``"avg"``), each score the one after a run's final stage (``variant_a``, ``variant_b``:
    which final stage, for runs trained with ``--compare``).

    ``runs_a``, ``runs_b``: run folders, run records (``results.json``) or glob patterns, as a list or as one
    comma-separated string. Each difference has its 95 % interval over seeds, paired by seed where the two sides
    share at least 2 seeds, else Welch's (``pcctune.evaluation.compare.seed_difference``), and a verdict: a win or
    a loss for B only where the interval excludes 0, else a tie. Where the runs are paired, ``mean_a`` and ``mean_b``
    are the means over the paired seeds, and the runs of the other seeds are named in ``left_out``. Runs scored under
    different STS protocols, or a task on different test pairs, are refused (``scored_alike``)."""
    files_a, files_b = side_files(runs_a), side_files(runs_b)
    records_a, records_b = read_runs(files_a), read_runs(files_b)
    (a, rising_a), (b, rising_b) = side_scores(records_a, "A", variant_a), side_scores(records_b, "B", variant_b)
    tasks = shared_tasks(dict([*a.values(), *b.values()]), task)
    protocol = scored_alike(records_a | records_b, tasks)
    paired = paired_seeds(a, b)
    used_a, used_b = ({seed: side[seed] for seed in paired} if paired else side for side in (a, b))
    return CompareResult(
        a=[str(file) for file in files_a],
        b=[str(file) for file in files_b],
        seeds_a=sorted(a),
        seeds_b=sorted(b),
        variant_a=variant_a,
        variant_b=variant_b,
        left_out=[str(file) for side in (a, b) for seed, (file, _) in side.items() if paired and seed not in paired],
        rising_a=[str(file) for seed, (file, _) in used_a.items() if seed in rising_a],
        rising_b=[str(file) for seed, (file, _) in used_b.items() if seed in rising_b],
        mean_a={name: math.fsum(s[name] for _, s in used_a.values()) / len(used_a) for name in tasks},
        mean_b={name: math.fsum(s[name] for _, s in used_b.values()) / len(used_b) for name in tasks},
        differences={
            name: seed_difference(
                {seed: s[name] for seed, (_, s) in a.items()}, {seed: s[name] for seed, (_, s) in b.items()}
            )
            for name in tasks
        },
        protocol=protocol,
        versions=library_versions(),
    )


def runs_cell(difference: Difference) -> str:
    """What stands behind an interval: the seeds paired, the runs of each side, or the test pairs."""
    if difference.method == "paired bootstrap":
        return f"{difference.n} pairs"
    if difference.method == "paired t":
        return f"{difference.n} paired seeds"
    return f"{difference.n_a} + {difference.n_b} runs"


def compare_table(result: CompareResult) -> ScoreTable:
    """One row per task: A, B, B − A with its interval, what stands behind it, the method and the verdict."""
    rows: dict[str, dict[str, Cell]] = {}
    a, b = result.name_a, result.name_b
    for name, difference in result.differences.items():
        low, high = difference.low, difference.high
        rows[SHORT_NAMES.get(name, name)] = {
            a: result.mean_a[name],
            b: result.mean_b[name],
            f"{b} − {a}": f"{difference.mean:+.2f}",
            f"{difference.confidence * 100:g} % interval": "—" if low is None else f"[{low:+.2f}, {high:+.2f}]",
            "n": runs_cell(difference),
            "method": difference.method,
            "verdict": difference.verdict,
        }
    return ScoreTable.from_rows(rows, title=f"{b} − {a}, Spearman × 100", first_column="task")


def left_out_line(result: CompareResult) -> str | None:
    """The runs a paired comparison left out, by name, in one line; None where none was."""
    if not result.left_out:
        return None
    paired, a, b = next(iter(result.differences.values())).n, result.name_a, result.name_b
    runs = "1 run" if len(result.left_out) == 1 else f"{len(result.left_out)} runs"
    return (
        f"left out: {runs} whose seed the other side did not run ({', '.join(result.left_out)}); "
        f"{a}, {b} and {b} − {a} are over the {paired} seeds both sides ran"
    )


def comparison_lines(result: CompareResult) -> list[str]:
    """The two sides (a bootstrap's models with their prompt and precision), the protocol they were scored under,
    the runs left out and the runs best at their last dev evaluation, a line each."""
    first, a, b = next(iter(result.differences.values())), result.name_a, result.name_b
    lines: list[str | None] = [side_line(a, result.a, result.seeds_a, result.variant_a), model_line(a, result.model_a)]
    lines += [side_line(b, result.b, result.seeds_b, result.variant_b), model_line(b, result.model_b)]
    lines += [protocol_line(result.protocol)]
    lines += [left_out_line(result)]
    lines += [rising_line(a, result.rising_a, first.n_a, f"{b} − {a}")]
    lines += [rising_line(b, result.rising_b, first.n_b, f"{b} − {a}")]
    return [line for line in lines if line is not None]


def headline(result: CompareResult) -> str:
    """The headline difference (``avg``, else the one task) in plain words."""
    task = AVERAGE if AVERAGE in result.differences else next(iter(result.differences))
    return f"{task}: {result.differences[task].sentence(result.name_a, result.name_b)}"


def print_comparison(result: CompareResult, console: Console) -> None:
    """The two sides and their runs (``comparison_lines``), the table and the headline difference."""
    print_section(console, compare_table(result), comparison_lines(result), [headline(result)])


def comparison_markdown(result: CompareResult, source: str) -> list[str]:
    """The comparison as ``print_comparison`` shows it, as markdown lines under a heading naming ``source``."""
    return markdown_section(compare_table(result), source, comparison_lines(result), [headline(result)])


def bootstrap_flags(data: Path | None, protocol: str | None, seed: int | None, resamples: int | None) -> list[str]:
    """The options of ``--bootstrap`` alone (two models scored on the test pairs) that were given."""
    options = {"--data": data, "--protocol": protocol, "--seed": seed, "--resamples": resamples}
    return [flag for flag, value in options.items() if value is not None]


def run_compare(
    runs_a: str,
    runs_b: str,
    bootstrap: bool = False,
    data: Path | None = None,
    protocol: str | None = None,
    task: str | None = None,
    seed: int | None = None,
    resamples: int | None = None,
    output: Path | None = None,
    console: Console | None = None,
    variant_a: str | None = None,
    variant_b: str | None = None,
) -> CompareResult:
    """``pcctune compare``: ``compare_runs``, or with ``bootstrap`` ``compare_models`` (whose options
    ``data``, ``protocol``, ``seed`` and ``resamples`` are); print it and write it to ``output``. A side given as
    ``NAME=RUNS`` goes by that name."""
    console = console or plain_console()
    if seed is not None:
        check_seed(seed)
    if output is not None:
        check_output_file(output)
    (name_a, spec_a), (name_b, spec_b) = named(runs_a, "A"), named(runs_b, "B")
    runs_a, runs_b = str(spec_a), str(spec_b)
    if bootstrap:
        result = compare_models(
            runs_a,
            runs_b,
            data,
            protocol,
            task,
            BOOTSTRAP_SEED if seed is None else seed,
            resamples or RESAMPLES,
            variant_a,
            variant_b,
        )
    elif given := bootstrap_flags(data, protocol, seed, resamples):
        raise PcctuneError(f"{', '.join(given)}: options of --bootstrap (two models scored on the test pairs)")
    else:
        result = compare_runs(runs_a, runs_b, task, variant_a, variant_b)
    result = result.model_copy(update={"name_a": name_a, "name_b": name_b})
    print_comparison(result, console)
    if output is not None:
        result.to_disk(output)
        console.print(f"comparison -> {output}", highlight=False, markup=False)
    return result
