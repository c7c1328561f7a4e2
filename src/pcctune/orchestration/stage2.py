"""``pcctune data stage2``: build the filtered stage-2 set, write it and its leakage report, print the counts."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from pcctune.data.cache import senteval_folder
from pcctune.data.leakage import LEVELS, NEAR_THRESHOLD, LeakageLevel
from pcctune.data.stage2 import Stage2Set, build_stage2_set, save_pairs_jsonl
from pcctune.errors import PcctuneError
from pcctune.io import check_output_file, write_json


def leakage_table(result: Stage2Set, title: str) -> Table:
    """Per source: its pairs, what the chosen level kept, and what each level would remove."""
    report = result.report_dict()
    table = Table(title=title)
    for column in ("source", "pairs", "kept", *(f"removed at {level}" for level in LEVELS)):
        table.add_column(column, justify="left" if column == "source" else "right")
    for source in report["sources"]:
        kept = str(report["kept_by_source"][source["source"]])
        table.add_row(source["source"], str(source["total"]), kept, *(str(source["removed"][lv]) for lv in LEVELS))
    for source in report["dev_sets"]:
        removed = (str(source["removed"][lv]) for lv in LEVELS)
        table.add_row(f"{source['source']} (dev; not in the set)", str(source["total"]), "—", *removed)
    return table


def run_stage2(
    data: Path | None,
    level: LeakageLevel,
    rescale_sick: bool,
    output: Path,
    report: Path,
    console: Console,
    near_threshold: float = NEAR_THRESHOLD,
) -> Stage2Set:
    """Filter STS-B + SICK-R train against the test sets at ``level``; write the pairs (jsonl) and the report."""
    for path, flag in ((output, "--output"), (report, "--report")):
        check_output_file(path, flag)
    if output.resolve() == report.resolve():
        raise PcctuneError(f"--output and --report are both {output}: give each its own file")
    senteval = senteval_folder(data)
    result = build_stage2_set(senteval, level, rescale_sick, near_threshold)
    save_pairs_jsonl(result.pairs, output)
    write_json(result.report_dict(), report)
    console.print(leakage_table(result, f"stage-2 leakage filter at level {level.value} on {senteval}"))
    console.print(f"stage-2 set: {len(result.pairs)} pairs -> {output}; report -> {report}")
    return result
