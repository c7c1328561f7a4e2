"""Issue 25's table from the records of ``benchmarks/decoder_full_queue.sh`` (docs/results/decoder_full).

Rows: zero-shot PromptEOL, ICL (one dev-chosen demonstration), stage 1 (InfoNCE, 4-bit), stage 1 + Pcc and
stage 1 + the contrastive stage-2 baseline (mean ± std over the seeds present). Columns: the seven tasks and
their average under the papers' protocol (adapter on the 16-bit base, as the authors), then the average under
the SimCSE protocol, the average with the 4-bit base, and the trained stage's wall time and peak memory. A row
whose records are not there yet is listed as pending, so the table can be rebuilt after every queue step.

    python benchmarks/decoder_full.py [--records docs/results/decoder_full/records] [--output docs/results/decoder_full]

``--quick`` scores a tiny Llama's zero-shot rows into a scratch records folder, then builds the table from them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from _common import STS_COLUMNS, Benchmark, Measured, Rows, run
from pcctune.evaluation.tables import mean_std_cell
from pcctune.results import EvalResult, RunResult, load_result
from pcctune.testing import TinyWorkspace

STAGE1, STAGE2 = "contrastive-nli", "pcc"
NOT_QUANTIZED = "n/a"  # an untrained row has no adapter, so no 4-bit evaluation


def stage2_record(records: Path, seed: int, loss: str) -> RunResult | None:
    """The run record that scores stage 2 with ``loss`` for ``seed``: one run of both losses (``seedN``, or
    ``seedN_partial`` while it runs: a copy of its ``results.partial.json``), or a run of that loss alone
    (``seedN_LOSS``). ``benchmarks/decoder_full_queue.sh`` asks it which rows are still to train."""
    for name in (f"seed{seed}", f"seed{seed}_partial", f"seed{seed}_{loss}"):
        path = records / f"{name}.json"
        if path.is_file() and f"{STAGE2}-{loss}" in (run := load_result(path)).sts_by_stage:
            return run
    return None


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
    seed1 = load("seed1")
    stage1 = scored(seed1 and seed1.sts_by_stage.get(STAGE1), load("stage1_simcse"), load("stage1_4bit"))
    stage1["stage"] = seed1 and next((s for s in seed1.stages if s.stage == STAGE1), None)
    rows.append(("stage 1 (InfoNCE, QLoRA)", [stage1]))
    for loss, label in (("pearson", "stage 1 + Pcc (Pearson)"), ("contrastive", "stage 1 + contrastive stage 2")):
        seeds = []
        for seed in (1, 2, 3):
            run, name = stage2_record(records, seed, loss), f"{STAGE2}-{loss}"
            if run is None:
                continue
            stage = next((s for s in run.stages if s.stage == name), None)
            seeds.append(
                scored(
                    run.sts_by_stage.get(name),
                    load(f"seed{seed}_{loss}_simcse"),
                    load(f"seed{seed}_{loss}_4bit"),
                    stage,
                )
            )
        rows.append((label, seeds))
    return rows


def _avg(value: Any) -> float | None:
    scores = value.sts if isinstance(value, EvalResult) else value
    return None if not scores else float(scores["avg"])


def _sts(value: Any) -> dict[str, float] | None:
    return value.sts if isinstance(value, EvalResult) else value


def _seed_summary(seed: dict[str, Any]) -> dict[str, Any]:
    """One seed's measurements as plain numbers (what the benchmark record keeps)."""
    stage = seed["stage"]
    return {
        "paper": _sts(seed["paper"]),
        "simcse_avg": _avg(seed["simcse"]),
        "4bit_avg": NOT_QUANTIZED if seed["4bit"] == NOT_QUANTIZED else _avg(seed["4bit"]),
        "stage_s": stage and stage.wall_time_s,
        "cpu_s": stage and stage.cpu_time_s,
        "peak_mb": stage and stage.peak_memory_mb,
    }


def _cells(seeds: list[dict[str, Any]]) -> list[str]:
    cells = [mean_std_cell([float(s["paper"][c]) for s in seeds]) for c in STS_COLUMNS]
    for key in ("simcse_avg", "4bit_avg"):
        values = [s[key] for s in seeds if s[key] not in (None, NOT_QUANTIZED)]
        na = all(s[key] == NOT_QUANTIZED for s in seeds)
        cells.append(mean_std_cell(values) if values else "—" if na else "pending")
    cells.append(str(len(seeds)))
    for key in ("stage_s", "cpu_s", "peak_mb"):  # a seed without the measurement (older records) is left out
        values = [s[key] for s in seeds if s.get(key) is not None]
        cells.append(f"{np.mean(values):.0f}" if values else "—")
    return cells


def table(rows: Rows, details: dict[str, Any]) -> str:
    header = ["row", *STS_COLUMNS, "SimCSE avg", "4-bit avg", "seeds", "stage s", "stage CPU s", "peak MB"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        present = [s for s in row["seeds"] if s["paper"] is not None]
        cells = _cells(present) if present else ["pending", *[""] * (len(header) - 2)]
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> Path:
    from pcctune.plotting import plt, save_figure

    figure, ax = plt.subplots(figsize=(8, 3.6))
    labels, means, errors = [], [], []
    for row in rows:
        values = [s["paper"]["avg"] for s in row["seeds"] if s["paper"] is not None]
        if values:
            labels.append(row["label"])
            means.append(float(np.mean(values)))
            errors.append(float(np.std(values, ddof=1)) if len(values) > 1 else 0.0)
    ax.barh(labels, means, xerr=errors, color="#4c72b0", capsize=4)
    ax.axvline(78.87, color="grey", linestyle="--", label="all-MiniLM-L6-v2 (78.87)")
    ax.set(xlabel="avg Spearman × 100 (paper protocol, 7 STS tasks)", xlim=(max(0, min(means or [50]) - 10), 90))
    ax.legend(fontsize=8)
    return save_figure(figure, path)


def tiny_zero_shot_records(args: argparse.Namespace, tiny: TinyWorkspace) -> None:
    """--quick: a tiny Llama's zero-shot rows under PromptEOL, both protocols (the queue's first two steps)."""
    from pcctune.modeling.build import build_model
    from pcctune.orchestration.library import evaluate

    args.records = tiny.senteval.parent / "records"
    for protocol, name in (("paper-prompt", "zero_shot_paper"), ("simcse-senteval", "zero_shot_simcse")):
        model = build_model(str(tiny.llama), template="eol")
        evaluate(model, protocol=protocol, data=tiny.senteval).to_disk(args.records / f"{name}.json")


def measure(args: argparse.Namespace) -> Measured:
    rows = [{"label": label, "seeds": [_seed_summary(s) for s in seeds]} for label, seeds in rows_of(args.records)]
    return Measured(rows, f"records: {args.records}; commands: benchmarks/decoder_full_queue.sh")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=Path, default=Path("docs/results/decoder_full/records"))


BENCHMARK = Benchmark.of(__name__, output="docs/results/decoder_full", plot=plot, prepare_quick=tiny_zero_shot_records)

if __name__ == "__main__":
    run(BENCHMARK)
