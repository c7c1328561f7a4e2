"""Issue 25's table from the records of ``benchmarks/decoder_full_queue.sh`` (docs/results/decoder_full).

Rows: zero-shot PromptEOL, ICL (one dev-chosen demonstration), stage 1 (InfoNCE, 4-bit), stage 1 + Pcc and
stage 1 + the contrastive stage-2 baseline (mean ± std over the seeds present). Columns: the seven tasks and
their average under the papers' protocol (adapter on the 16-bit base, as the authors), then the average under
the SimCSE protocol, the average with the 4-bit base, and the trained stage's wall time and peak memory. A row
whose records are not there yet is listed as pending, so the table can be rebuilt after every queue step.

    python benchmarks/decoder_full.py [--records docs/results/decoder_full/records] [--output docs/results/decoder_full]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from _common import STS_COLUMNS
from pcctune.evaluation.tables import mean_std_cell
from pcctune.io import write_text
from pcctune.plotting import plt, save_figure
from pcctune.results import EvalResult, RunResult, load_result

STAGE1, STAGE2 = "contrastive-nli", "pcc"
NOT_QUANTIZED = "n/a"  # an untrained row has no adapter, so no 4-bit evaluation


def rows_of(records: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each row's per-seed measurements (scores under both protocols and precisions, time, memory)."""

    def load(name: str) -> Any:
        path = records / f"{name}.json"
        return load_result(path) if path.is_file() else None

    def scored(paper: Any, simcse: Any, four: Any = NOT_QUANTIZED, stage: Any = None) -> dict[str, Any]:
        return {"paper": paper, "simcse": simcse, "4bit": four, "stage": stage}

    rows: list[tuple[str, list[dict[str, Any]]]] = [
        ("zero-shot PromptEOL", [scored(load("zero_shot_paper"), load("zero_shot_simcse"))]),
        ("ICL (1 demonstration, dev-chosen)", [scored(load("icl_paper"), load("icl_simcse"))]),
    ]
    seed1: RunResult | None = load("seed1")
    stage1 = scored(seed1 and seed1.sts.get(STAGE1), load("stage1_simcse"), load("stage1_4bit"))
    stage1["stage"] = seed1 and next((s for s in seed1.stages if s.stage == STAGE1), None)
    rows.append(("stage 1 (InfoNCE, QLoRA)", [stage1]))
    for loss, label in (("pearson", "stage 1 + Pcc (Pearson)"), ("contrastive", "stage 1 + contrastive stage 2")):
        seeds = []
        for seed in (1, 2, 3):
            run: RunResult | None = load(f"seed{seed}")
            if run is None:
                continue
            name = f"{STAGE2}-{loss}"
            stage = next((s for s in run.stages if s.stage == name), None)
            seeds.append(
                scored(run.sts.get(name), load(f"seed{seed}_{loss}_simcse"), load(f"seed{seed}_{loss}_4bit"), stage)
            )
        rows.append((label, seeds))
    return rows


def _avg(value: Any) -> float | None:
    scores = value.sts if isinstance(value, EvalResult) else value
    return None if not scores else float(scores["avg"])


def table(rows: list[tuple[str, list[dict[str, Any]]]]) -> str:
    header = ["row", *STS_COLUMNS, "SimCSE avg", "4-bit avg", "seeds", "stage s", "peak MB"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for label, seeds in rows:
        present = [s for s in seeds if s["paper"] is not None]
        if not present:
            lines.append(f"| {label} | pending |" + " |" * (len(header) - 2))
            continue
        paper = [p.sts if isinstance(p := s["paper"], EvalResult) else p for s in present]
        cells = [mean_std_cell([float(scores[c]) for scores in paper]) for c in STS_COLUMNS]
        for key in ("simcse", "4bit"):
            values = [v for s in present if s[key] != NOT_QUANTIZED and (v := _avg(s[key])) is not None]
            na = all(s[key] == NOT_QUANTIZED for s in present)
            cells.append(mean_std_cell(values) if values else "—" if na else "pending")
        stages = [s["stage"] for s in present if s["stage"] is not None]
        cells += [str(len(present))]
        cells += (
            [f"{np.mean([s.wall_time_s for s in stages]):.0f}", f"{np.mean([s.peak_memory_mb for s in stages]):.0f}"]
            if stages
            else ["—", "—"]
        )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[tuple[str, list[dict[str, Any]]]], path: Path) -> Path:
    figure, ax = plt.subplots(figsize=(8, 3.6))
    labels, means, errors = [], [], []
    for label, seeds in rows:
        values = [a for s in seeds if (a := _avg(s["paper"])) is not None]
        if values:
            labels.append(label)
            means.append(float(np.mean(values)))
            errors.append(float(np.std(values, ddof=1)) if len(values) > 1 else 0.0)
    ax.barh(labels, means, xerr=errors, color="#4c72b0", capsize=4)
    ax.axvline(78.87, color="grey", linestyle="--", label="all-MiniLM-L6-v2 (78.87)")
    ax.set(xlabel="avg Spearman × 100 (paper protocol, 7 STS tasks)", xlim=(max(0, min(means or [50]) - 10), 90))
    ax.legend(fontsize=8)
    return save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, default=Path("docs/results/decoder_full/records"))
    parser.add_argument("--output", type=Path, default=Path("docs/results/decoder_full"))
    args = parser.parse_args()
    rows = rows_of(args.records)
    text = table(rows)
    print(text)
    write_text(args.output / "table.md", text + "\n")
    plot(rows, args.output / "decoder_full.png")


if __name__ == "__main__":
    main()
