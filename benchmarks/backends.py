"""ONNX and OpenVINO against torch, measured side by side in one run (issue 15, acceptance 3).

Exports MODEL once with ``pcctune export MODEL --backend openvino`` (which writes the ONNX backbone
too), then runs ``pcctune eval EXPORT --backend B`` for B = torch, onnx, openvino, alternating, each
in a fresh process, ``--rounds`` times. Reports the seven STS numbers + avg of each backend, the
largest gap to torch's numbers, and the wall time of the whole process (best of the rounds) as a
ratio to torch's. Every backend uses the same thread count (torch's).

    python benchmarks/backends.py --output docs/results/backends
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _common import STS_COLUMNS, write_results
from pcctune.evaluation.tables import ScoreTable
from speed import _python

BACKENDS = ("torch", "onnx", "openvino")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data", default=None, help="SentEval folder (default: PCCTUNE_DATA / ../shared/data)")
    parser.add_argument("--output", type=Path, default=Path("docs/results/backends"))
    args = parser.parse_args()
    data = ["--data", args.data] if args.data else []
    with tempfile.TemporaryDirectory() as scratch:
        export = Path(scratch) / "export"
        started = time.perf_counter()
        _python(["-m", "pcctune", "export", args.model, "--backend", "openvino", "--output", str(export)])
        export_s = time.perf_counter() - started
        walls: dict[str, list[float]] = {b: [] for b in BACKENDS}
        scores: dict[str, dict[str, float]] = {}
        for _ in range(args.rounds):
            for backend in BACKENDS:
                out = Path(scratch) / f"{backend}.json"
                out.unlink(missing_ok=True)
                wall, _ = _python(
                    ["-m", "pcctune", "eval", str(export), "--backend", backend, "--output", str(out), *data]
                )
                walls[backend].append(round(wall, 2))
                scores[backend] = json.loads(out.read_text())["sts"]
    rows = []
    for backend in BACKENDS:
        gap = max(abs(scores[backend][c] - scores["torch"][c]) for c in STS_COLUMNS)
        best = min(walls[backend])
        rows.append(
            {
                "backend": backend,
                "sts": scores[backend],
                "wall_s": best,
                "walls_s": walls[backend],
                "speed_vs_torch": round(min(walls["torch"]) / best, 2),
                "max_gap_to_torch": round(gap, 4),
            }
        )
    table = ScoreTable(
        f"{args.model}: STS (Spearman × 100) and wall time per backend",
        [*STS_COLUMNS, "max abs Δ vs torch", "wall s", "speed vs torch"],
        [
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
        ],
        first_column="backend",
    )
    settings = (
        f"model {args.model}; export (pcctune export --backend openvino) {export_s:.0f} s; "
        f"each wall time is a whole `pcctune eval EXPORT --backend B` process, best of {args.rounds} alternating rounds"
    )
    write_results(args.output, "backends", table, settings, rows, "backend")


if __name__ == "__main__":
    main()
