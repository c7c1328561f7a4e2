"""``pcctune compare A B1 B2 …``: one method against several, read as one family of comparisons.

Read at 95 % each, comparing a method with four others calls some win by chance far more often than 5 % of the time.
Here every B − A on one task (the seven-task average unless ``--task`` names another) is paired by seed and read
together (``pcctune.evaluation.multiple.holm_differences``): the uncorrected paired t interval, Holm's step-down
decision (the chance of any false win in the family at most 5 %) and Bonferroni's simultaneous interval beside it.
A win is called only where Holm rejects, with its size where the simultaneous interval excludes 0 and its sign alone
where that interval still holds 0 (``Corrected.decision``). ``family_size`` reads a family planned in advance before
all of it has run: its comparisons not run yet count as untested.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from pcctune.console import plain_console
from pcctune.errors import PcctuneError
from pcctune.evaluation.compare import MIN_PAIRED_SEEDS, paired_seeds
from pcctune.evaluation.multiple import Corrected, holm_differences
from pcctune.evaluation.report import family_plot
from pcctune.evaluation.tables import Cell, ScoreTable
from pcctune.io import check_output_file
from pcctune.orchestration.compare_sides import (
    AVERAGE,
    Runs,
    markdown_section,
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
from pcctune.results import FamilyComparison, FamilyResult

SideScores = dict[int, float]


@dataclass(frozen=True)
class Side:
    """One side's runs: each seed's score on the task compared, its run record, and the seeds whose compared stage
    was best at its last dev evaluation."""

    scores: SideScores
    files: dict[int, str]
    rising: set[int]


def read_sides(sides: Mapping[str, Runs], task: str, variant: Mapping[str, str | None]) -> tuple[str, dict[str, Side]]:
    """The STS protocol every run was scored under (``scored_alike``) and each named side's runs read from disk,
    every run checked to have scored ``task``."""
    records = {name: read_runs(side_files(runs)) for name, runs in sides.items()}
    found = {name: side_scores(records[name], name, variant[name]) for name in sides}
    shared_tasks({file: scores for runs, _ in found.values() for file, scores in runs.values()}, task)
    return scored_alike({file: run for side in records.values() for file, run in side.items()}, [task]), {
        name: Side(
            scores={seed: scores[task] for seed, (_, scores) in runs.items()},
            files={seed: str(file) for seed, (file, _) in runs.items()},
            rising=rising,
        )
        for name, (runs, rising) in found.items()
    }


def comparison(name: str, name_a: str, a: Side, b: Side, found: Corrected) -> FamilyComparison:
    """One B of the family, over the seeds it shares with A."""
    seeds = paired_seeds(a.scores, b.scores)
    return FamilyComparison(
        b=[b.files[seed] for seed in seeds],
        seeds=seeds,
        left_out=[side.files[seed] for side in (a, b) for seed in sorted(side.files) if seed not in seeds],
        rising_b=[b.files[seed] for seed in seeds if seed in b.rising],
        mean_a=math.fsum(a.scores[seed] for seed in seeds) / len(seeds),
        mean_b=math.fsum(b.scores[seed] for seed in seeds) / len(seeds),
        plain=found.plain,
        simultaneous=found.simultaneous,
        p=found.holm.p,
        holm_p=found.holm.adjusted,
        holm_rejects=found.holm.rejected,
        decision=found.decision(name_a, name),
    )


def compare_family(
    runs_a: Runs,
    sides_b: Sequence[Runs],
    task: str | None = None,
    family_size: int | None = None,
    variant_a: str | None = None,
    variant_b: str | None = None,
) -> FamilyResult:
    """Each side of ``sides_b`` − ``runs_a`` on ``task`` (default the seven-task average), paired by seed, read as
    one family of ``family_size`` comparisons (default: one per B). Sides as in ``compare_runs``; each B shares at
    least two seeds with A."""
    name_a, runs_a = named(runs_a, "A")
    named_sides = dict(named(side) for side in sides_b)
    if len(named_sides) != len(sides_b) or name_a in named_sides:
        raise PcctuneError("a family names each side once: give each B its own runs or its own NAME=RUNS")
    task = task or AVERAGE
    variants = {name_a: variant_a} | dict.fromkeys(named_sides, variant_b)
    protocol, sides = read_sides({name_a: runs_a, **named_sides}, task, variants)
    a = sides.pop(name_a)
    for name, b in sides.items():
        if len(paired_seeds(a.scores, b.scores)) < MIN_PAIRED_SEEDS:
            raise PcctuneError(
                f"{name}: a family is read over paired seeds, and {name_a} and {name} share "
                f"{len(set(a.files) & set(b.files))}"
                f"; run at least {MIN_PAIRED_SEEDS} of the same seeds on both"
            )
    corrected = holm_differences({name: (a.scores, b.scores) for name, b in sides.items()}, family_size=family_size)
    return FamilyResult(
        name_a=name_a,
        a=[a.files[seed] for seed in sorted(a.files)],
        seeds_a=sorted(a.files),
        variant_a=variant_a,
        variant_b=variant_b,
        rising_a=[a.files[seed] for seed in sorted(a.rising)],
        task=task,
        protocol=protocol,
        family_size=family_size or len(sides),
        method=next(iter(corrected.values())).method,
        comparisons={name: comparison(name, name_a, a, b, corrected[name]) for name, b in sides.items()},
        versions=library_versions(),
    )


def family_table(result: FamilyResult) -> ScoreTable:
    """One row per B: A and B over their paired seeds, B − A with its uncorrected and simultaneous intervals, the
    p-values and whether Holm rejects."""
    rows: dict[str, dict[str, Cell]] = {}
    for name, found in result.comparisons.items():
        rows[name] = {
            f"{result.name_a} (mean)": found.mean_a,
            "B (mean)": found.mean_b,
            f"B − {result.name_a}": f"{found.plain.mean:+.2f}",
            "seeds": len(found.seeds),
            "95 % (uncorrected)": f"[{found.plain.low:+.2f}, {found.plain.high:+.2f}]",
            result.method.split(",")[0]: f"[{found.simultaneous.low:+.2f}, {found.simultaneous.high:+.2f}]",
            "p": f"{found.p:.4f}",
            "Holm p": f"{found.holm_p:.4f}",
            "Holm rejects": "yes" if found.holm_rejects else "no",
        }
    return ScoreTable.from_rows(rows, title=f"B − {result.name_a} on {result.task}, Spearman × 100", first_column="B")


def family_lines(result: FamilyResult) -> list[str]:
    """A, the protocol every run was scored under, and each B, the runs left out and the runs best at their last dev
    evaluation, a line each."""
    lines: list[str | None] = [side_line(result.name_a, result.a, result.seeds_a, result.variant_a)]
    lines.append(protocol_line(result.protocol))
    lines.append(rising_line(result.name_a, result.rising_a, len(result.seeds_a)))
    for name, found in result.comparisons.items():
        lines.append(side_line(name, found.b, found.seeds, result.variant_b))
        if found.left_out:
            lines.append(
                f"left out of {name} − A: {', '.join(found.left_out)} (no run of their seed on the other side)"
            )
        lines.append(rising_line(name, found.rising_b, len(found.seeds)))
    return [line for line in lines if line is not None]


def decision_lines(result: FamilyResult) -> list[str]:
    """The intervals' method, then each B's decision in words."""
    decisions = [f"{name} − {result.name_a}: {found.decision}" for name, found in result.comparisons.items()]
    return [f"intervals: {result.method}; Holm's decisions over the same family", *decisions]


def print_family(result: FamilyResult, console: Console) -> None:
    """A and each B (``family_lines``), the table, then each B's decision in words."""
    print_section(console, family_table(result), family_lines(result), decision_lines(result))


def draw_family(result: FamilyResult, path: Path) -> Path:
    """Each B − A with its uncorrected and its simultaneous interval, one row each (a forest)."""
    drawn = {f"{name} − {result.name_a}": (f.plain, f.simultaneous) for name, f in result.comparisons.items()}
    title = f"{result.task}: 95 % (thick), {result.method} (thin)"
    return family_plot(drawn, path, title, xlabel=f"B − {result.name_a}, Spearman × 100 over paired seeds")


def family_markdown(result: FamilyResult, source: str, plot: Path) -> list[str]:
    """The family as ``print_family`` shows it, as markdown lines under a heading naming ``source``, with its forest
    drawn to ``plot`` (``pcctune report``)."""
    decisions = [f"- {line}" for line in decision_lines(result)]
    figure = f"![family]({draw_family(result, plot).name})"
    return markdown_section(family_table(result), source, family_lines(result), [*decisions, "", figure])


def run_compare_family(
    runs_a: Runs,
    sides_b: Sequence[Runs],
    task: str | None = None,
    family_size: int | None = None,
    output: Path | None = None,
    console: Console | None = None,
    variant_a: str | None = None,
    variant_b: str | None = None,
    plot: Path | None = None,
) -> FamilyResult:
    """``pcctune compare A B1 B2 …``: ``compare_family``, printed, written to ``output`` and drawn to ``plot``."""
    console = console or plain_console()
    for path, flag in ((output, "--output"), (plot, "--plot")):
        if path is not None:
            check_output_file(path, flag)
    result = compare_family(runs_a, sides_b, task, family_size, variant_a, variant_b)
    print_family(result, console)
    if plot is not None:
        draw_family(result, plot)
        console.print(f"plot -> {plot}", highlight=False, markup=False)
    if output is not None:
        result.to_disk(output)
        console.print(f"comparison -> {output}", highlight=False, markup=False)
    return result
