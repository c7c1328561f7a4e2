"""The one table writer: rows of named scores rendered as a rich table or as markdown.

Every table pcctune prints or saves (``eval``, ``train``, ``report``, the benchmarks) is a
``ScoreTable``: one row per run, one column per task (short names from the task registry),
optionally with each later row's difference to the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from pcctune.console import plain_console
from pcctune.data.tasks import SEVEN_TASKS, SHORT_NAMES
from pcctune.data.transfer import TRANSFER_TASKS
from pcctune.evaluation.interval import CONFIDENCE
from pcctune.results import TaskScore

Cell = float | int | str | None
TASK_ORDER = (*SEVEN_TASKS, *TRANSFER_TASKS)


def format_cell(value: Cell, digits: int = 2) -> str:
    """A table cell: a float at ``digits`` decimals, an empty score as a dash, anything else as it prints."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


@dataclass
class ScoreTable:
    """A titled table: ``columns`` (keys of each row), ``rows`` as (label, {column: value})."""

    title: str
    columns: list[str]
    rows: list[tuple[str, Mapping[str, Cell]]] = field(default_factory=list)
    first_column: str = "run"
    digits: int = 2

    @classmethod
    def from_rows(cls, rows: Mapping[str, Mapping[str, Cell]], title: str = "", **kwargs: object) -> ScoreTable:
        """A table whose columns are the keys of the first row (in order) and then any others, the STS and
        transfer tasks among them together in their usual order where the first of them stands (a row of some
        tasks, then one of all seven, reads STS12 … SICK-R all the same)."""
        columns: list[str] = []
        for values in rows.values():
            columns += [key for key in values if key not in columns]
        others = [column for column in columns if column not in TASK_ORDER]
        first = next((i for i, column in enumerate(columns) if column in TASK_ORDER), len(columns))
        tasks = [task for task in TASK_ORDER if task in columns]
        return cls(title, [*others[:first], *tasks, *others[first:]], list(rows.items()), **kwargs)  # type: ignore[arg-type]

    def header(self) -> list[str]:
        """The first column's name, then each column's short name."""
        return [self.first_column, *(SHORT_NAMES.get(c, c) for c in self.columns)]

    def cells(self, deltas: bool = False) -> list[list[str]]:
        """Formatted cells; with ``deltas``, numbers of later rows also show their difference to row one."""
        first = self.rows[0][1] if self.rows else {}
        out = []
        for index, (label, values) in enumerate(self.rows):
            row = [label]
            for column in self.columns:
                value, base = values.get(column), first.get(column)
                text = format_cell(value, self.digits)
                if deltas and index > 0 and isinstance(value, float | int) and isinstance(base, float | int):
                    text += f" ({value - base:+.{self.digits}f})"
                row.append(text)
            out.append(row)
        return out

    def to_markdown(self, deltas: bool = False) -> str:
        """The table as markdown (``cells`` for ``deltas``)."""
        lines = ["| " + " | ".join(self.header()) + " |", "|" + " --- |" * len(self.header())]
        lines += ["| " + " | ".join(row) + " |" for row in self.cells(deltas)]
        return "\n".join(lines)

    def to_rich(self, deltas: bool = False) -> Table:
        """The table for a terminal, numbers right-aligned."""
        table = Table(title=self.title or None)
        for index, name in enumerate(self.header()):
            table.add_column(name, justify="left" if index == 0 else "right")
        for row in self.cells(deltas):
            table.add_row(*row)
        return table

    def print(self, console: Console | None = None, deltas: bool = False) -> None:
        """Print the table to ``console`` (a plain one by default)."""
        (console or plain_console()).print(self.to_rich(deltas))


def interval_cell(ends: tuple[float, float] | None, digits: int = 2) -> str:
    """``[low, high]`` of an interval, or ``—`` where there is none."""
    return "—" if ends is None else f"[{ends[0]:.{digits}f}, {ends[1]:.{digits}f}]"


def interval_table(scores: Sequence[TaskScore], title: str = "", first_column: str = "pairs") -> ScoreTable:
    """One row per scored set: its pair count, Spearman and Pearson (× 100), each with its bootstrap interval."""
    confidence = next((s.interval.confidence for s in scores if s.interval), CONFIDENCE)
    label = f"{confidence * 100:g} % interval"
    rows: dict[str, dict[str, Cell]] = {}
    for score in scores:
        interval = score.interval
        rows[score.name] = {
            "n": score.n,
            "Spearman": score.spearman,
            f"Spearman {label}": interval_cell(interval.spearman if interval else None),
            "Pearson": score.pearson,
            f"Pearson {label}": interval_cell(interval.pearson if interval else None),
        }
    return ScoreTable.from_rows(rows, title=title, first_column=first_column)


def mean_std_cell(values: Sequence[float], digits: int = 2) -> str:
    """``mean ± std`` (sample std; just the value for one seed)."""
    import numpy as np

    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f}"
