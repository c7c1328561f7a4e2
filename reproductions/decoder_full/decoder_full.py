"""The papers' system on SmolLM2-135M (Pcc-tuning Table 3's rows), both stages in 4-bit, on the full test sets.

Rows: zero-shot PromptEOL, ICL (one dev-chosen demonstration), stage 1 (InfoNCE, 4-bit), stage 1 + Pcc and
stage 1 + the contrastive stage-2 baseline (mean ± std over the seeds present). Columns: the seven tasks and
their average under the papers' protocol (adapter on the 16-bit base, as the authors), then the average under
the SimCSE protocol, the average with the 4-bit base, the seeds, and the trained stage's wall time, CPU time and
peak memory over the seeds that have the measurement ("k/n" when only k of the n seeds do).

Each row is a ``pcctune`` command whose record lands in ``records/`` (:func:`steps`); a step whose record is
there is done, so rerunning continues the table. Run folders go under ``--runs`` (scratch); the stage-2 rows of
seeds 2 and 3 continue seed 1's stage-1 model from there. A row whose records are not there yet is pending.

``--quick`` runs the zero-shot and ICL steps on a tiny Llama, then builds the table from those records.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from reproductions._common import STS_COLUMNS, Measured, Rows, Step, claim, run_steps

from pcctune.evaluation.tables import mean_std_cell
from pcctune.results import EvalResult, RunResult, load_result

STAGE1, STAGE2 = "contrastive-nli", "pcc"
NOT_QUANTIZED = "n/a"  # an untrained row has no adapter, so no 4-bit evaluation
MINILM_RECORD = Path("reproductions/baselines/records/minilm_simcse.json")  # run from the repository root


def stage2_record(records: Path, seed: int, loss: str) -> RunResult | None:
    """The run record that scores stage 2 with ``loss`` for ``seed``: one run of both losses (``seedN``, or
    ``seedN_partial`` while it runs: a copy of its ``results.partial.json``), or a run of that loss alone
    (``seedN_LOSS``). :func:`steps` asks it which rows are still to train."""
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

    def scored(
        paper: Any, simcse: Any, four: Any = NOT_QUANTIZED, stage: Any = None, seed: int | None = None
    ) -> dict[str, Any]:
        return {"paper": paper, "simcse": simcse, "4bit": four, "stage": stage, "seed": seed}

    rows: list[tuple[str, list[dict[str, Any]]]] = [
        ("zero-shot PromptEOL", [scored(load("zero_shot_paper"), load("zero_shot_simcse"))]),
        ("ICL (1 demonstration, dev-chosen)", [scored(load("icl_paper"), load("icl_simcse"))]),
    ]
    seed1 = load("seed1")
    stage1 = scored(seed1 and seed1.sts_by_stage.get(STAGE1), load("stage1_simcse"), load("stage1_4bit"), seed=1)
    timed = load("stage1_rerun") or seed1  # seed 1's own stage-1 record timed only its last process (31 of 91 steps)
    stage1["stage"] = timed and next((s for s in timed.stages if s.stage == STAGE1), None)
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
                    seed,
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
        "seed": seed["seed"],
        "paper": _sts(seed["paper"]),
        "simcse_avg": _avg(seed["simcse"]),
        "4bit_avg": NOT_QUANTIZED if seed["4bit"] == NOT_QUANTIZED else _avg(seed["4bit"]),
        "stage_s": stage and (stage.wall_time_s if stage.sessions == 1 else None),
        "cpu_s": stage and stage.cpu_time_s,
        "peak_mb": stage and stage.peak_memory_mb,
    }


def _seed_mean(seeds: list[dict[str, Any]]) -> dict[str, float]:
    """The mean of each papers'-protocol score over the seeds scored so far: the row's ``sts``, which ``pcctune
    report`` reads (none before the first)."""
    scored = [seed["paper"] for seed in seeds if seed["paper"]]
    return {column: round(float(np.mean([paper[column] for paper in scored])), 4) for column in (scored or [{}])[0]}


def _cells(seeds: list[dict[str, Any]]) -> list[str]:
    cells = [mean_std_cell([float(s["paper"][c]) for s in seeds]) for c in STS_COLUMNS]
    for key in ("simcse_avg", "4bit_avg"):
        values = [s[key] for s in seeds if s[key] not in (None, NOT_QUANTIZED)]
        na = all(s[key] == NOT_QUANTIZED for s in seeds)
        share = "" if len(values) in (0, len(seeds)) else f" ({len(values)}/{len(seeds)})"
        cells.append(mean_std_cell(values) + share if values else "—" if na else "pending")
    cells.append(str(len(seeds)))
    for key in ("stage_s", "cpu_s", "peak_mb"):  # a seed without the measurement is left out, and counted
        values = [s[key] for s in seeds if s.get(key) is not None]
        share = "" if len(values) == len(seeds) else f" ({len(values)}/{len(seeds)})"
        cells.append(f"{np.mean(values):.0f}{share}" if values else "—")
    return cells


def table(rows: Rows, details: dict[str, Any]) -> str:
    header = ["row", *STS_COLUMNS, "SimCSE avg", "4-bit avg", "seeds", "stage s", "stage CPU s", "peak MB"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        present = [s for s in row["seeds"] if s["paper"] is not None]
        cells = _cells(present) if present else ["pending", *[""] * (len(header) - 2)]
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    lines += ["", TIME_NOTE, *stage2_difference(rows)]
    return "\n".join(lines)


def stage2_difference(rows: Rows) -> list[str]:
    """Pcc − the contrastive stage 2 on the papers' average, paired by the seeds both rows trained (each seed's
    stage 2 continues the same stage-1 model), with its 95 % interval; nothing until both rows have two seeds."""
    from pcctune.evaluation.compare import seed_difference

    by_label = {row["label"]: row["seeds"] for row in rows}
    pcc, contrastive = (
        {s["seed"]: s["paper"]["avg"] for s in by_label.get(label, []) if s.get("seed") and s["paper"]}
        for label in ("stage 1 + Pcc (Pearson)", "stage 1 + contrastive stage 2")
    )
    if len(pcc) < 2 or len(contrastive) < 2:
        return []
    difference = seed_difference(contrastive, pcc).sentence("the contrastive stage 2", "Pcc")
    return ["", f"Papers' protocol, avg: {difference} (95 %)."]


TIME_NOTE = (
    "stage s: wall time of the seeds whose stage trained in one process (a resumed stage's time leaves out its "
    "pauses but not what ran beside it); stage 1's time and CPU time are from its full rerun (stage1_rerun: 91 "
    "steps, one process, MKL's GEMM); stage CPU s: CPU seconds of all threads, recorded from the later runs on; "
    "peak MB: the stage's peak resident memory; each a mean over the row's seeds that have it, (k/n): k of the "
    "row's n seeds have the measurement."
)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> Path:
    from pcctune.plotting import save_figure, subplots

    figure, ax = subplots(figsize=(8, 3.6))
    labels, means, errors = [], [], []
    for row in rows:
        values = [s["paper"]["avg"] for s in row["seeds"] if s["paper"] is not None]
        if values:
            labels.append(row["label"])
            means.append(float(np.mean(values)))
            errors.append(float(np.std(values, ddof=1)) if len(values) > 1 else 0.0)
    ax.barh(labels, means, xerr=errors, color="#4c72b0", capsize=4)
    encoder = _avg(load_result(MINILM_RECORD))  # the encoder the front page starts from, for scale
    if encoder is not None:
        ax.axvline(encoder, color="grey", linestyle="--", label=f"all-MiniLM-L6-v2 ({encoder:.2f})")
    ax.set(xlabel="avg Spearman × 100 (paper protocol, 7 STS tasks)", xlim=(max(0, min(means or [50]) - 10), 90))
    ax.legend(fontsize=8)
    return save_figure(figure, path)


def _eval(name: str, model: str, protocol: str, *options: str, before: tuple[str, ...] = ()) -> Step:
    evaluation = ("eval", model, "--protocol", protocol, *options, "--output", "{record}")
    return Step(name, (before, evaluation) if before else (evaluation,))


def _both_precisions(name: str, model: str, *options: str) -> list[Step]:
    """A trained row's other evaluations: the SimCSE protocol, and the papers' on the 4-bit base."""
    quantization = "nf4" if "--adapter" in options else "saved"
    return [
        _eval(f"{name}_simcse", model, "simcse-senteval", *options),
        _eval(f"{name}_4bit", model, "paper-prompt", *options, "--quantization", quantization),
    ]


def stage2_config(args: argparse.Namespace) -> Path:
    """The recipe's stage 2 alone, continuing seed 1's stage-1 model (its last step, as the recipe's init)."""
    from pcctune.training.config import dump_config, load_config

    recipe = load_config(args.recipe)
    stage1 = args.runs / "seed1" / f"stage1-{STAGE1}" / "last"
    config = recipe.model_copy(update={"model": str(stage1), "template": None, "stages": recipe.stages[1:]})
    return dump_config(config, args.runs / "stage2_from_seed1.yaml")


def steps(args: argparse.Namespace) -> list[Step]:
    """Every command of the table, in order. Seeds 2 and 3 train each stage-2 row alone (``seedN_LOSS``) from seed
    1's stage-1 model; seed 1's Pcc and seed 3's contrastive rows are rescored from their committed adapters."""
    model, runs, here, eol = args.model, "{runs}", str(HERE), ("--template", "eol")
    icl = ("icl", model, *eol, "--output", f"{runs}/icl_model")
    found = [
        _eval("zero_shot_paper", model, "paper-prompt", *eol),
        _eval("zero_shot_simcse", model, "simcse-senteval", *eol),
        _eval("icl_paper", f"{runs}/icl_model", "paper-prompt", before=icl),
        _eval("icl_simcse", f"{runs}/icl_model", "simcse-senteval", before=icl),
    ]
    if args.quick:
        return found
    found += [Step("seed1", (("train", str(args.recipe), "--set", "seed=1", "--compare", "pearson,contrastive"),))]
    found += _both_precisions("stage1", f"{runs}/seed1/stage1-{STAGE1}/final")
    for seed in (2, 3):
        for loss in ("pearson", "contrastive"):
            if stage2_record(args.output / "records", seed, loss) is None:
                name, config = f"seed{seed}_{loss}", str(stage2_config(args))
                found += [Step(name, (("train", config, "--set", f"seed={seed}", "--compare", loss),))]
                found += _both_precisions(name, f"{runs}/{name}/stage1-{STAGE2}-{loss}/final")
    found += _both_precisions("seed1_pearson", model, *eol, "--adapter", f"{here}/adapter")
    found += _both_precisions("seed3_contrastive", model, *eol, "--adapter", f"{here}/adapter_contrastive_seed3")
    return found


def measure(args: argparse.Namespace) -> Measured:
    records = args.output / "records"
    run_steps(steps(args), args.output, args.runs, args.data)
    rows = [
        {"label": label, "seeds": summaries, "sts": _seed_mean(summaries)}
        for label, seeds in rows_of(records)
        for summaries in [[_seed_summary(s) for s in seeds]]
    ]
    return Measured(rows, f"records: {HERE}/records; commands: python -m reproductions decoder_full")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--recipe", type=Path, default=Path("configs/paper_recipe_smollm2_cpu.yaml"))
    parser.add_argument("--runs", type=Path, default=Path("runs/decoder_full"), help="the run folders (scratch)")


HERE = Path("reproductions/decoder_full")  # run from the repository root, as the runner does
QUICK = {"model": "{llama}", "runs": "{senteval}/../runs"}  # --quick: the untrained rows on a tiny Llama
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
