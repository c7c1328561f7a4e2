"""``pcctune sweep``'s summary: the winner's scores over its seed runs, and where it sits in its space (a value at an
edge, its growth, the seed runs best at their last dev evaluation), in ``sweep.json``, ``summary.md`` and a warning
where the space may hold it back."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from pcctune.evaluation.tables import ScoreTable, mean_std_cell
from pcctune.io import write_text
from pcctune.orchestration.growth import Growth
from pcctune.orchestration.search_space import Distribution, edge_side, edges
from pcctune.provenance import library_versions
from pcctune.results import BenchmarkResult, BenchmarkRow, RunResult


def where_the_winner_sits(
    space: dict[str, Distribution], params: dict[str, Any], results: list[RunResult], growth: Growth | None = None
) -> tuple[list[str], bool]:
    """One line per finding about the winner (each searched value at an edge of its space,
    ``pcctune.orchestration.search_space.edges``; its ``growth``; how many seed runs' last stage was best at its last
    dev evaluation, ``StageRecord.best_at_last_evaluation``) and whether the space may hold it back: a value at an
    edge, the longest schedule grown leading, or more than half of the seed runs best at their last evaluation
    (still improving where the schedule stopped). A grown schedule (and a halved learning rate) is read from its
    growth, not its space; a schedule the growth went beyond is no longer at the space's high edge, while one at its
    low edge still is."""
    grown = growth.grown_keys() if growth is not None else []
    at_edges = {
        key: where
        for key, where in edges(space, {key: value for key, value in params.items() if key not in grown}).items()
        if growth is None or key != growth.key or edge_side(params[key], space[key]) == "low"
    }
    lines = [f"{key} = {params[key]:g} sits at {where}" for key, where in at_edges.items()]
    limit = growth is not None and growth.at_limit
    if growth is not None:
        lines.append(growth.line() + (": the longest schedule grown leads, the limit of this sweep" if limit else ""))
    known = [r.stages[-1].best_at_last_evaluation for r in results if r.stages]
    flags = [flag for flag in known if flag is not None]
    if flags:
        lines.append(f"best at its last dev evaluation in {sum(flags)} of {len(flags)} seed runs")
    return lines, bool(at_edges) or limit or 2 * sum(flags) > len(flags)


def summarise(
    results: list[RunResult],
    params: dict[str, Any],
    dev: float,
    space: dict[str, Distribution],
    growth: Growth | None = None,
) -> BenchmarkResult:
    """The winner's last-stage scores over seeds (one row per seed), its growth and where it sits in its space."""
    rows = []
    for index, result in enumerate(results, start=1):
        scores = list(result.sts_by_stage.values())[-1]
        last = result.stages[-1] if result.stages else None
        run: dict[str, Any] = {
            "best_dev": last.best_dev_spearman if last else None,
            "best_at_last_evaluation": last.best_at_last_evaluation if last else None,
        }
        rows.append(BenchmarkRow(label=f"seed {index}", sts=scores, details=run))
    findings, held_back = where_the_winner_sits(space, params, results, growth)
    return BenchmarkResult(
        name="sweep",
        settings=f"winner {params} (dev {dev:.4f})",
        versions=library_versions(),
        rows=rows,
        details={
            "params": params,
            "dev": dev,
            "where_the_winner_sits": findings,
            "space_may_hold_it_back": held_back,
            "growth": None if growth is None else asdict(growth),
        },
    )


HELD_BACK = (
    "the space may hold the winner back ({findings}): widen it past that edge, or lengthen the schedule, and sweep "
    "again before comparing it (a method stopped at the edge of its space has not shown its best)"
)


def write_summary(summary: BenchmarkResult, seeds: int, output: Path, console: Console) -> None:
    """``sweep.json`` and ``summary.md`` (the table over seeds, the winner, where it sits), the table printed, and a
    warning where the space may hold the winner back."""
    summary.to_disk(output / "sweep.json")
    columns = list(summary.rows[0].sts)
    table = ScoreTable(
        f"winner over {seeds} seeds", columns, [(r.label, r.sts) for r in summary.rows], first_column="run"
    )
    table.rows.append(("mean ± std", {c: mean_std_cell([r.sts[c] for r in summary.rows]) for c in columns}))
    findings = summary.details["where_the_winner_sits"]
    where = "".join(f"- {line}\n" for line in findings) or "- inside its space on every key\n"
    text = f"{table.to_markdown()}\n\n{summary.settings}\n\nWhere the winner sits in its space:\n\n{where}"
    write_text(output / "summary.md", text)
    table.print(console)
    if summary.details["space_may_hold_it_back"]:
        console.print(f"[yellow]{HELD_BACK.format(findings='; '.join(findings))}[/yellow]")
