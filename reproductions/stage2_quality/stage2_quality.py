"""Every stage-2 loss with its own dev-selected hyperparameters, then its winner over 3 seeds.

For each loss of ``--losses`` (none by default: only read what ran), a ``pcctune sweep`` in its own folder
(``SWEEPS/<loss>``; rerunning continues it): the same search space, trial budget and dev set for every loss, and
selection never sees a test set. Then this script reads every sweep folder and writes, under --output:

- ``table.md`` / ``runs.json``: per loss, mean ± std over the winner's seeds on the seven STS test
  sets and their avg, the train time, the selected hyperparameters and the winner's dev score;
- ``sweeps.json``: every trial of every sweep (state, values, dev score, each dev set's own score);
- ``best_configs/<loss>.yaml``: each winner's config, ready to train;
- ``stage2_quality.png``: avg ± std per loss against the base model;
- ``dev_selected.md``: the Pcc family's and sentence-transformers' losses each chosen on dev (never
  on a test set), and the two choices' test avgs paired by seed.

Round 1 (6 trials a loss) is the claim's folder; round 2 (a higher learning-rate range, SICK rescaled, 8 trials)
is ``round2/``: ``python -m reproductions stage2_quality --rerun -- --losses pearson cosine_mse`` runs both.

``--quick`` first runs two tiny sweeps (Pearson and CoSENT, one trial and one seed each) and reads those.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from matplotlib.patches import Patch
from reproductions._common import STS_COLUMNS, Measured, Rows, claim, to_record
from reproductions._difference import DIFFERENCE_NOTE, difference_cell, holm_cells, holm_note

from pcctune.evaluation.tables import ScoreTable, mean_std_cell
from pcctune.io import write_text
from pcctune.losses.registry import LOSSES
from pcctune.results import EvalResult, RunResult
from pcctune.testing import TinyWorkspace

HERE = Path("reproductions/stage2_quality")  # run from the repository root, as the runner does

SHORT = {
    "stages.0.learning_rate": "lr",
    "stages.0.epochs": "epochs",
    "stages.0.batch_size": "batch",
    "stages.0.warmup_ratio": "warmup",
    "stages.0.data.rescale_sick": "rescale SICK",
}


def trial_records(sweep: Path) -> list[dict[str, Any]]:
    """Every trial of a sweep's study, with the per-dev-set scores of its best dev evaluation."""
    import optuna

    study = optuna.load_study(study_name="pcctune", storage=f"sqlite:///{sweep / 'study.db'}")
    records = []
    for trial in study.trials:
        record: dict[str, Any] = {"number": trial.number, "state": trial.state.name, "value": trial.value}
        record["params"] = {SHORT.get(k, k): v for k, v in trial.params.items()}
        history = sweep / "trials" / f"trial-{trial.number:03d}" / "stage1-pcc" / "log_history.json"
        if history.is_file():
            evals = [row for row in json.loads(history.read_text()) if any(k.endswith("_spearman_cosine") for k in row)]
            if evals:
                best = max(evals, key=lambda row: row["eval_sick-trial+stsb-dev_spearman_cosine"])
                record["dev_parts_at_best"] = {
                    part: best[f"eval_sick-trial+stsb-dev_{part}_spearman_cosine"]
                    for part in ("sick-trial", "stsb-dev-filtered")
                }
        records.append(record)
    return records


def loss_row(loss: str, sweep: Path) -> dict[str, Any] | None:
    """The winner's finished seeds of one sweep as a table row (None before the first seed has finished)."""
    import optuna

    seeds = sorted((sweep / "seeds").glob("seed-*/results.json"))
    if not seeds:
        return None
    study = optuna.load_study(study_name="pcctune", storage=f"sqlite:///{sweep / 'study.db'}")
    runs = [RunResult.from_disk(path) for path in seeds]
    scores = [list(run.sts_by_stage.values())[-1] for run in runs]
    return {
        "loss": loss,
        "sts_seeds": scores,
        "sts": {c: float(np.mean([s[c] for s in scores])) for c in STS_COLUMNS},
        "train_s": round(float(np.mean([run.stages[-1].wall_time_s for run in runs])), 1),
        "params": {SHORT.get(k, k): v for k, v in study.best_params.items()},
        "dev": study.best_value,
    }


def family(loss: str) -> str:
    """Whose loss it is: sentence-transformers' own, or pcctune's (Pcc-tuning's Pearson and the losses beyond it)."""
    return "sentence-transformers" if LOSSES[loss].cls.__module__.startswith("sentence_transformers") else "Pcc family"


def in_fixed_order(rows: Rows) -> Rows:
    """The rows in an order that ranks nothing: the Pcc family first, the paper's Pearson loss first within it, the
    rest by name (the seeds' spread is as large as most gaps between the means)."""
    return sorted(rows, key=lambda row: (family(row["loss"]) != "Pcc family", row["loss"] != "pearson", row["loss"]))


def dev_selected_comparison(rows: list[dict[str, Any]]) -> str:
    """The comparison without looking at a test set: each family's loss is the one with the best dev
    score; then the two choices' test avgs, paired by seed."""
    chosen: dict[str, dict[str, Any]] = {}
    for row in rows:
        if len(row["sts_seeds"]) == 3 and row["dev"] > chosen.get(family(row["loss"]), {"dev": -1.0})["dev"]:
            chosen[family(row["loss"])] = row
    lines = [
        "| family | losses (3 seeds done) | chosen on dev | its dev | its test avg |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, row in chosen.items():
        members = ", ".join(r["loss"] for r in rows if family(r["loss"]) == name and len(r["sts_seeds"]) == 3)
        avgs = [seed["avg"] for seed in row["sts_seeds"]]
        lines.append(f"| {name} | {members} | {row['loss']} | {row['dev']:.4f} | {mean_std_cell(avgs)} |")
    if len(chosen) == 2:
        pcc, st = chosen["Pcc family"], chosen["sentence-transformers"]
        gaps = [a["avg"] - b["avg"] for a, b in zip(pcc["sts_seeds"], st["sts_seeds"], strict=True)]
        lines.append(
            f"\n{pcc['loss']} − {st['loss']}, paired by seed: "
            + ", ".join(f"{gap:+.2f}" for gap in gaps)
            + f"; mean {np.mean(gaps):+.2f}"
        )
    return "\n".join(lines)


def _spread(values: list[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    from pcctune.plotting import save_figure, subplots

    base, model, rows = details["base"], details["model"], in_fixed_order(rows)
    labels = ["base model", *(row["loss"] for row in rows)]
    means = [base["avg"], *(row["sts"]["avg"] for row in rows)]
    stds = [0.0, *(_spread([s["avg"] for s in row["sts_seeds"]]) for row in rows)]
    figure, ax = subplots(figsize=(max(7, len(labels) * 1.1), 4.2))
    colors = {"Pcc family": "tab:blue", "sentence-transformers": "tab:orange"}
    ax.bar(range(len(labels)), means, yerr=stds, capsize=3, color=["gray", *(colors[family(r["loss"])] for r in rows)])
    ax.legend(handles=[Patch(color=color, label=name) for name, color in colors.items()], loc="upper right", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
    ax.set_ylim(min(means) - 1.5, max(means) + 1.0)
    ax.set_ylabel("STS avg (Spearman × 100), mean ± std over 3 seeds")
    ax.set_title(f"{model}, stage 2: each loss dev-selected, same trial budget")
    for index, (mean, std) in enumerate(zip(means, stds, strict=True)):
        ax.text(index, mean + std + 0.08, f"{mean:.2f}", ha="center", fontsize=8)
    save_figure(figure, path)


PEARSON_MINUS = "pearson − this loss"


def by_seed(row: dict[str, Any]) -> dict[int, float]:
    """A row's seven-task average by seed (a sweep trains its winner with seeds 1, 2, 3, kept in that order)."""
    return {seed: scores["avg"] for seed, scores in enumerate(row["sts_seeds"], start=1)}


def table(rows: Rows, details: dict[str, Any]) -> str:
    base = {"train s": "—", "selected (dev only)": "—", PEARSON_MINUS: "—", "Holm": "—"}
    cells = [("none (base model)", {**details["base"], **base})]
    pearson = next((by_seed(row) for row in rows if row["loss"] == "pearson"), None)
    others = [row for row in rows if row["loss"] != "pearson"]
    holm = holm_cells({row["loss"]: (by_seed(row), pearson) for row in others}) if pearson else {}
    for row in in_fixed_order(rows):
        seeds = row["sts_seeds"]
        label = row["loss"] if len(seeds) == 3 else f"{row['loss']} ({len(seeds)} of 3 seeds)"
        chosen = ", ".join(f"{k} {v:.2e}" if k == "lr" else f"{k} {v}" for k, v in row["params"].items())
        against = difference_cell(by_seed(row), pearson) if pearson and row["loss"] != "pearson" else "—"
        cells.append(
            (
                label,
                {c: mean_std_cell([s[c] for s in seeds]) for c in STS_COLUMNS}
                | {"train s": f"{row['train_s']:.0f}", "selected (dev only)": f"{chosen}; dev {row['dev']:.4f}"}
                | {PEARSON_MINUS: against, "Holm": holm.get(row["loss"], "—")},
            )
        )
    title = f"Stage-2 losses on {details['model']} (Spearman × 100, mean ± std over 3 seeds)"
    columns = [*STS_COLUMNS, "train s", "selected (dev only)", PEARSON_MINUS, "Holm"]
    markdown = ScoreTable(title, columns, cells, first_column="stage-2 loss").to_markdown()
    return markdown + f"\n\n{PEARSON_MINUS}: the seven-task average, {DIFFERENCE_NOTE}. {holm_note(len(holm))}."


def write_sweep_details(args: argparse.Namespace, rows: Rows, sweeps: list[Path], settings: str) -> None:
    """Beside the table: every trial (sweeps.json), each winner's config, the dev-selected comparison."""
    trial_rows = [
        {"trial": f"{sweep.name} trial {t['number']}", "loss": sweep.name, **t}
        for sweep in sweeps
        for t in trial_records(sweep)
    ]
    to_record("stage2_quality_trials", trial_rows, "trial", settings).to_disk(args.output / "sweeps.json")
    for row in rows:
        (args.output / "best_configs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(
            args.sweeps / row["loss"] / "best_config.yaml", args.output / "best_configs" / f"{row['loss']}.yaml"
        )
    comparison = dev_selected_comparison(rows)
    print(comparison)
    write_text(args.output / "dev_selected.md", comparison + "\n")


def run_sweeps(args: argparse.Namespace) -> None:
    """Each loss of ``--losses`` swept on dev (continued when its folder holds part of the sweep)."""
    from rich.console import Console

    from pcctune.orchestration.sweep import run_sweep

    fixed = {"stages.0.dev": "sick-trial+stsb-dev", "stages.0.eval_steps": 40, "stages.0.max_seq_length": 128}
    fixed |= {"stages.0.data.rescale_sick": True} if args.rescale_sick else {}
    for loss in args.losses:
        overrides = fixed | {"stages.0.loss": loss}
        run_sweep(args.config, args.space, args.trials, 3, args.sweeps / loss, overrides, Console())


def measure(args: argparse.Namespace) -> Measured:
    run_sweeps(args)
    sweeps = [sweep for sweep in sorted(args.sweeps.iterdir()) if (sweep / "study.db").is_file()]
    rows = in_fixed_order([row for sweep in sweeps if (row := loss_row(sweep.name, sweep))])
    settings = (
        f"each loss: `pcctune sweep` over {args.space} (TPE + median pruning), "
        "selection on the combined dev set sick-trial+stsb-dev (test overlap removed), then the winner with "
        "seeds 1–3 on the seven test sets (SimCSE protocol); train s = mean wall time of a seed's training"
    )
    write_sweep_details(args, rows, sweeps, settings)
    return Measured(rows, settings, {"base": EvalResult.from_disk(args.base).sts, "model": args.model})


def tiny_sweeps(args: argparse.Namespace, tiny: TinyWorkspace) -> None:
    """--quick: a one-trial, one-seed sweep of Pearson and of CoSENT on a tiny BERT, and its base evaluation."""
    from rich.console import Console

    from pcctune.modeling.build import build_model
    from pcctune.orchestration.library import evaluate
    from pcctune.orchestration.sweep import run_sweep

    root = tiny.senteval.parent
    args.sweeps, args.base, args.model = root / "sweeps", root / "base.json", str(tiny.bert)
    evaluate(build_model(str(tiny.bert)), data=tiny.senteval).to_disk(args.base)
    tiny_run = {
        "model": str(tiny.bert),
        "data_dir": str(tiny.senteval),
        "stages.0.max_steps": 2,
        "stages.0.eval_steps": 1,
    }
    space = {"stages.0.learning_rate": {"type": "float", "low": 1e-4, "high": 1e-3, "log": True}}
    args.space = root / "space.yaml"
    args.space.write_text(yaml.safe_dump(space))
    for loss in ("pearson", "cosent"):
        overrides = tiny_run | {"stages.0.loss": loss, "stages.0.batch_size": 2, "stages.0.dev": "sick-trial+stsb-dev"}
        run_sweep(args.config, args.space, 1, 1, args.sweeps / loss, overrides, Console(quiet=True))


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweeps", type=Path, default=Path("runs/quality"))
    parser.add_argument("--losses", nargs="*", default=[], help="sweep these losses first (none: only read)")
    parser.add_argument("--trials", type=int, default=6, help="trials of each sweep")
    parser.add_argument("--rescale-sick", action="store_true", help="SICK's scores rescaled to 0-5 (round 2)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the swept model (titles only)")
    parser.add_argument("--base", type=Path, default=HERE.parent / "baselines" / "records" / "minilm_simcse.json")
    parser.add_argument("--space", type=Path, default=HERE / "round1_space.yaml", help="the sweeps' space")
    parser.add_argument("--config", type=Path, default=HERE / "sweep_base.yaml", help="the sweeps' base config")


ROUND2 = ["--sweeps", "runs/quality/round2", "--space", str(HERE / "round2_space.yaml"), "--trials", "8"]
TABLES = {"": [], "round2": [*ROUND2, "--rescale-sick"]}
BENCHMARK = claim(__name__, label_key="loss", plot=plot, prepare_quick=tiny_sweeps)
