"""Pcc-tuning's bound (§2.3, Appendix A): a scorer that only separates pairs into two classes reaches a Spearman of
at most 0.875 (the paper's closed form 1 − 6Σd²/(n(n²−1)) at n/2 pairs per class).

Computed, not trained: for ``--n`` pairs with distinct gold scores, the paper's formula against the exact optimum
(the Pearson correlation of tie-averaged ranks, √3/2 ≈ 0.866 in the limit); and on the seven real test sets (gold
ties), the best Spearman any two-valued scorer reaches, plotted beside all-MiniLM-L6-v2's scores (``bound.png``).

``--quick`` computes both on the miniature test sets.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reproductions._common import Measured, Rows, claim


def measure(args: argparse.Namespace) -> Measured:
    from rich.console import Console

    from pcctune.orchestration.bound import run_bound

    data = Path(args.data) if args.data else None
    results = args.results if args.results and args.results.is_file() else None
    payload = run_bound(args.n, True, data, results, args.output / "bound.png", None, Console(quiet=True))
    rows: Rows = [{"row": n, **values} for n, values in payload.items() if n != "sts_ceilings"]
    rows += [{"row": task, **values} for task, values in payload["sts_ceilings"].items()]
    return Measured(rows, "gold scores of the seven test sets as SentEval gives them", {"results": str(results)})


def table(rows: Rows, details: dict[str, Any]) -> str:
    lines = ["| n | paper's formula | exact optimum |", "| --- | --- | --- |"]
    lines += [f"| {r['row'][2:]} | {r['paper']:.6f} | {r['exact']:.6f} |" for r in rows if r["row"].startswith("n=")]
    lines += ["", "| test set | pairs | distinct gold scores | ceiling × 100 | √(3k(n−k)/(n²−1)) × 100 |"]
    lines += ["| --- | --- | --- | --- | --- |"]
    for r in rows:
        if "n" in r:
            cells = [r["row"], f"{r['n']:,}", str(r["distinct_scores"]), f"{r['ceiling']:.2f}"]
            lines.append("| " + " | ".join([*cells, f"{r['formula_exact']:.2f}"]) + " |")
    lines += [f"| mean of the seven | | | {r['ceiling']:.2f} | |" for r in rows if r["row"] == "avg"]
    return "\n".join(lines)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 1001], help="pair counts with distinct gold")
    minilm = Path("reproductions/baselines/records/minilm_simcse.json")
    parser.add_argument("--results", type=Path, default=minilm, help="pcctune eval record plotted beside")


QUICK = {"n": [10, 11], "results": "{senteval}/none.json"}  # --quick: the miniature test sets
BENCHMARK = claim(__name__, quick=QUICK, label_key="row")
