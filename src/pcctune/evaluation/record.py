"""Result files that say exactly what produced them: protocol, data hashes, model, versions, time."""

from __future__ import annotations

import importlib.metadata
import json
import platform
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pcctune.evaluation.sts import TaskScore
from pcctune.evaluation.transfer import TransferScore
from pcctune.hashing import file_sha256

LIBRARIES = ("pcctune", "torch", "transformers", "sentence-transformers", "peft", "accelerate", "scipy", "numpy")


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def file_hashes(paths: list[Path]) -> dict[str, str]:
    return {str(path): file_sha256(path) for path in sorted(set(paths))}


def eval_record(
    *,
    model: str,
    template: str | None,
    pooling: str | None,
    dtype: str,
    seed: int | None,
    data_dir: Path,
    data_files: list[Path],
    wall_time_s: float,
    protocol: str,
    sts: tuple[list[TaskScore], float] | None = None,
    transfer: list[TransferScore] | None = None,
) -> dict:
    """A JSON-ready record of one evaluation: what was run, on which files, with which libraries."""
    record = {
        "protocol": protocol,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": model,
        "template": template,
        "pooling": pooling,
        "dtype": dtype,
        "seed": seed,
        "data_dir": str(data_dir),
        "data_files_sha256": file_hashes(data_files),
        "versions": library_versions(),
        "wall_time_s": round(wall_time_s, 2),
    }
    if sts is not None:
        scores, avg = sts
        record["sts"] = {s.name: round(s.spearman, 4) for s in scores} | {"avg": round(avg, 4)}
        record["sts_detail"] = [asdict(s) for s in scores]
    if transfer is not None:
        record["transfer"] = {t.name: round(t.accuracy, 2) for t in transfer}
        record["transfer"]["avg"] = round(sum(t.accuracy for t in transfer) / len(transfer), 2)
        record["transfer_detail"] = [asdict(t) for t in transfer]
    return record


def write_json(payload: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


SHORT_NAMES = {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R"}


def sts_table(rows: dict[str, dict[str, float]], title: str = "STS (Spearman × 100)") -> Table:
    """A rich table with one row per run and one column per task (e.g. the seven STS tasks + avg)."""
    table = Table(title=title)
    columns = list(next(iter(rows.values())))
    table.add_column("run")
    for column in columns:
        table.add_column(SHORT_NAMES.get(column, column), justify="right")
    for run, values in rows.items():
        table.add_row(run, *(f"{values[c]:.2f}" for c in columns))
    return table


def print_table(table: Table) -> None:
    Console(width=160).print(table)
