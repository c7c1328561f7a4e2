"""``pcctune data stage2``: build the filtered stage-2 set, write it and its leakage report, print the counts."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from pcctune.data.cache import senteval_folder
from pcctune.data.leakage import Normalization
from pcctune.data.stage2 import Stage2Set, build_stage2_set, save_pairs_jsonl
from pcctune.io import check_output_file, write_json


def leakage_table(result: Stage2Set, title: str) -> Table:
    table = Table(title=title)
    for column in ("source", "total", "kept", "removed", "removed by test set"):
        table.add_column(column, justify="left" if column in ("source", "removed by test set") else "right")
    for r in [*result.reports, result.dev_overlap]:
        hits = ", ".join(f"{k} {v}" for k, v in r.removed_by_test_set.items())
        label = r.source + (" (overlap only; not in the set)" if r is result.dev_overlap else "")
        table.add_row(label, str(r.total), str(r.kept), str(r.removed), hits)
    return table


def run_stage2(
    data: Path | None, normalization: Normalization, rescale_sick: bool, output: Path, report: Path, console: Console
) -> Stage2Set:
    """Filter STS-B + SICK-R train against the test sets; write the pairs (jsonl) and the report (json)."""
    for path in (output, report):
        check_output_file(path)
    senteval = senteval_folder(data)
    result = build_stage2_set(senteval, normalization, rescale_sick)
    save_pairs_jsonl(result.pairs, output)
    write_json(result.report_dict(), report)
    console.print(leakage_table(result, f"stage-2 leakage filter ({normalization.value} match) on {senteval}"))
    console.print(f"stage-2 set: {len(result.pairs)} pairs -> {output}; report -> {report}")
    return result
