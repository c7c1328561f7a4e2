"""Result records read from what a user names: a record file, a run folder (its ``results.json``), or every JSON
of a folder."""

from __future__ import annotations

from pathlib import Path

from pcctune.errors import PcctuneError
from pcctune.orchestration.run_folder import RESULTS
from pcctune.results import AnyResult, load_result


def result_files(path: Path) -> list[Path]:
    """A result file, a run folder's ``results.json``, or every JSON of a folder."""
    if path.is_file():
        return [path]
    if path.is_dir():
        if (path / RESULTS).is_file():
            return [path / RESULTS]
        files = sorted(path.glob("*.json"))
        if files:
            return files
    raise PcctuneError(f"no result JSON at {path}")


def load_records(paths: list[Path]) -> list[tuple[Path, AnyResult]]:
    """Every result record of the files and folders given, with its file."""
    return [(file, load_result(file)) for path in paths for file in result_files(path)]
