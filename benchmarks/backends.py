"""ONNX and OpenVINO against torch, measured side by side in one run .

Exports MODEL once with ``pcctune export MODEL --backend openvino`` (which writes the ONNX backbone
too), then runs ``pcctune eval EXPORT --backend B`` for B = torch, onnx, openvino, alternating, each
in a fresh process, ``--rounds`` times. Reports the seven STS numbers + avg of each backend, the
largest gap to torch's numbers, and the wall time of the whole process (best of the rounds) as a
ratio to torch's. Every backend uses the same thread count (torch's).

    python benchmarks/backends.py --output benchmarks/results/backends
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import STS_COLUMNS, Benchmark, Measured, Rows, data_flag, run, run_python
from pcctune.evaluation.tables import ScoreTable

BACKENDS = ("torch", "onnx", "openvino")


def wall_times(args: argparse.Namespace, export: Path, scratch: Path) -> tuple[dict[str, list[float]], dict]:
    """``pcctune eval EXPORT --backend B`` for every backend, alternating, ``--rounds`` times."""
    walls: dict[str, list[float]] = {b: [] for b in BACKENDS}
    scores: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for backend in BACKENDS:
            out = scratch / f"{backend}.json"
            out.unlink(missing_ok=True)
            wall, _ = run_python(
                ["-m", "pcctune", "eval", str(export), "--backend", backend, "--output", str(out), *data_flag(args)]
            )
            walls[backend].append(round(wall, 2))
            scores[backend] = json.loads(out.read_text())["sts"]
    return walls, scores


def measure(args: argparse.Namespace) -> Measured:
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        started = time.perf_counter()
        run_python(["-m", "pcctune", "export", args.model, "--backend", "openvino", "--output", str(scratch / "x")])
        export_s = time.perf_counter() - started
        walls, scores = wall_times(args, scratch / "x", scratch)
    rows = [
        {
            "backend": backend,
            "sts": scores[backend],
            "wall_s": min(walls[backend]),
            "walls_s": walls[backend],
            "speed_vs_torch": round(min(walls["torch"]) / min(walls[backend]), 2),
            "max_gap_to_torch": round(max(abs(scores[backend][c] - scores["torch"][c]) for c in STS_COLUMNS), 4),
        }
        for backend in BACKENDS
    ]
    settings = (
        f"model {args.model}; export (pcctune export --backend openvino) {export_s:.0f} s; "
        f"each wall time is a whole `pcctune eval EXPORT --backend B` process, best of {args.rounds} alternating rounds"
    )
    return Measured(rows, settings)


def table(rows: Rows, details: dict[str, Any]) -> str:
    columns = [*STS_COLUMNS, "max abs Δ vs torch", "wall s", "speed vs torch"]
    cells = [
        (
            r["backend"],
            {
                **r["sts"],
                "max abs Δ vs torch": f"{r['max_gap_to_torch']:.4f}",
                "wall s": f"{r['wall_s']:.1f}",
                "speed vs torch": f"{r['speed_vs_torch']:.2f}×",
            },
        )
        for r in rows
    ]
    return ScoreTable("STS (Spearman × 100) and wall time per backend", columns, cells, "backend").to_markdown()


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--rounds", type=int, default=2)


QUICK = {"model": "{bert}", "rounds": 1}  # --quick: every code path on tiny random models
BENCHMARK = Benchmark.of(__name__, quick=QUICK, label_key="backend", output="benchmarks/results/backends")

if __name__ == "__main__":
    run(BENCHMARK)
