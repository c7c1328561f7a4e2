"""``pcctune bound``: the binary-classifier ceiling for given n, on the real test sets, and its plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from pcctune.data.cache import senteval_folder
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError
from pcctune.evaluation.bound import EXACT_LIMIT, PAPER_LIMIT, binary_bound
from pcctune.evaluation.bound_report import dataset_ceilings, plot_bounds
from pcctune.evaluation.tables import ScoreTable
from pcctune.io import check_output_file, write_json
from pcctune.results import EvalResult

N_TITLE = "Best Spearman of a two-valued scorer over n pairs with distinct gold scores"
STS_TITLE = "Best Spearman × 100 any two-valued scorer reaches on each test set (real gold ties)"
LIMITS = f"limits: paper → {PAPER_LIMIT}, exact → √3/2 = {EXACT_LIMIT:.6f} (exactly √3/2 for every odd n)"


def bounds_for_n(ns: list[int]) -> dict[str, dict[str, Any]]:
    """Both ceilings (and their best k) for each n."""
    rows = {}
    for n in ns:
        if n < 2:
            raise PcctuneError(f"--n must be at least 2 (got {n})")
        b = binary_bound(n)
        rows[f"n={n}"] = {"paper": b.paper, "paper_k": b.paper_k, "exact": b.exact, "exact_k": b.exact_k}
    return rows


def n_table(rows: dict[str, dict[str, Any]]) -> ScoreTable:
    """The binary classifier's bound for each number of pairs n, as the paper states it and exactly."""
    return ScoreTable(N_TITLE, ["paper", "paper_k", "exact", "exact_k"], list(rows.items()), first_column="n", digits=6)


def sts_table(ceilings: dict[str, dict[str, Any]]) -> ScoreTable:
    """Each STS test set's ceiling for a binary classifier, from its own gold scores."""
    columns = ["n", "distinct_scores", "ceiling", "high_pairs", "formula_exact"]
    return ScoreTable(STS_TITLE, columns, list(ceilings.items()), first_column="task")


def run_bound(
    ns: list[int],
    sts: bool,
    senteval: Path | None,
    results: Path | None,
    plot: Path | None,
    output: Path | None,
    console: Console,
) -> dict[str, Any]:
    """Print the requested ceilings; save the plot and the numbers where asked. Inputs are checked first."""
    if not ns and not sts:
        raise PcctuneError("give --n N (one or more) and/or --test-sets")
    for path, flag in ((plot, "--plot"), (output, "--output")):
        if path is not None:
            check_output_file(path, flag)
    scores = EvalResult.from_disk(results).sts if results else None
    payload: dict[str, Any] = {}
    ceilings = None
    if ns:
        payload = bounds_for_n(ns)
        n_table(payload).print(console)
        console.print(LIMITS)
    if sts:
        ceilings = dataset_ceilings(load_test_tasks(senteval_folder(senteval)))
        sts_table(ceilings).print(console)
        payload["sts_ceilings"] = ceilings
    if plot is not None:
        plot_bounds(ceilings, scores, plot)
        console.print(f"plot -> {plot}")
    if output is not None:
        write_json(payload, output)
    return payload
