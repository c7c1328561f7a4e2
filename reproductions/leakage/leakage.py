"""Does Pcc-tuning's stage-2 gain survive a stricter leakage filter?

all-MiniLM-L6-v2, the ready config's stage 2 (configs/minilm_stage2.yaml: Pearson loss, batch 32, 2 epochs,
checkpoint selected on SICK trial + STS-B dev with their test pairs removed), trained on the stage-2 set
filtered at each leakage level (pair, normalized, near, sentence) with three losses: Pearson, the stage-2
contrastive baseline (Pcc-tuning §4.3) and cosine-MSE (sentence-transformers' best loss in the project's
stage-2 loss table); then all-mpnet-base-v2 with Pearson at ``pair`` and ``sentence``. Every run is scored
on the seven full test sets (SimCSE protocol).

    python reproductions/leakage/leakage.py                 # every missing run, in priority order; resumable
    python reproductions/leakage/leakage.py --summarize     # table.md and leakage.png from records/
    python reproductions/leakage/leakage.py --quick         # every code path on tiny random models

Each finished run leaves ``records/<run>.json`` (a :class:`~pcctune.results.RunResult`); a run whose record
exists is done, and a run folder left by a killed run is resumed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from pcctune.data.leakage import LEVELS, LeakageLevel
from pcctune.data.tasks import SEVEN_TASKS, SHORT_NAMES
from pcctune.io import write_text
from pcctune.results import RunResult
from pcctune.training.config import RunConfig

HERE = Path(__file__).resolve().parent
READY_CONFIG = HERE.parents[1] / "configs" / "minilm_stage2.yaml"
TASKS = list(SEVEN_TASKS)
SHORT = [SHORT_NAMES[task] for task in TASKS]
LOSSES = ("pearson", "contrastive", "cosine_mse")


@dataclass(frozen=True)
class Run:
    """One cell of the experiment: model, leakage level, loss, seed."""

    model: str
    level: LeakageLevel
    loss: str
    seed: int

    @property
    def name(self) -> str:
        short = "mpnet" if "mpnet" in self.model else "minilm"
        return f"{short}-{self.level.value}-{self.loss}-seed{self.seed}"


def plan() -> list[Run]:
    """Every run, in the order they are worth having: the sentence-disjoint cells first (they answer the
    question and are the cheapest: a tenth of the pairs), the baselines at ``pair``, more seeds where the
    sets are small, Pearson at the middle levels, MPNet, and the rest."""
    minilm, mpnet = "all-MiniLM-L6-v2", "all-mpnet-base-v2"
    pair, normalized, near, sentence = LEVELS
    order = [Run(minilm, sentence, loss, 1) for loss in LOSSES]
    order += [Run(minilm, pair, loss, 1) for loss in LOSSES[1:]]
    order += [Run(minilm, sentence, loss, seed) for seed in (2, 3) for loss in LOSSES]
    order += [Run(minilm, level, "pearson", 1) for level in (normalized, near)]
    order += [Run(mpnet, sentence, "pearson", 1)]
    order += [Run(minilm, level, loss, 1) for level in (normalized, near) for loss in LOSSES[1:]]
    order += [
        Run(minilm, level, loss, seed) for seed in (2, 3) for level in (pair, normalized, near) for loss in LOSSES
    ]
    order += [Run(mpnet, pair, "pearson", 1)]
    return [run for run in order if run.name not in BORROWED]


BORROWED = {"minilm-pair-pearson-seed1": HERE.parent / "minilm_stage2" / "records" / "ready.json"}
"""Cells whose run is already recorded elsewhere under the same settings: the ready config itself is the
Pearson run at ``pair``, seed 1 (its record also holds the base model's scores)."""


def config_of(run: Run, runs_dir: Path, quick: dict | None = None) -> RunConfig:
    """The ready config with the run's model, loss, seed and leakage level (the base model scored once per model)."""
    payload = yaml.safe_load(READY_CONFIG.read_text())
    stage = payload["stages"][0]
    stage["name"], stage["loss"] = run.loss, run.loss
    stage["data"]["leakage"] = run.level.value
    # MPNet's base scores come with its first run; MiniLM's are in the borrowed record
    first = run == Run("all-mpnet-base-v2", LeakageLevel.sentence, "pearson", 1)
    payload |= {"model": run.model, "seed": run.seed, "output_dir": str(runs_dir / run.name), "evaluate_before": first}
    if quick:
        payload["model"] = quick["model"]
        stage |= {
            "batch_size": 2,
            "epochs": 1,
            "max_steps": 2,
            "eval_steps": 1,
            "logging_steps": 1,
            "dev": "sick-trial",
            "contrastive_threshold": 0.0,  # the tiny data has one pair above 4
        }
    return RunConfig.model_validate(payload)


def train_missing(records: Path, runs_dir: Path, only: list[str], quick: dict | None = None) -> None:
    from pcctune.orchestration.library import train
    from pcctune.orchestration.run_folder import holds_a_run

    todo = [run for run in plan() if not (records / f"{run.name}.json").is_file() and (not only or run.name in only)]
    for number, run in enumerate(todo, 1):
        print(f"[{number}/{len(todo)}] {run.name}", flush=True)
        config = config_of(run, runs_dir, quick)
        result = train(config, resume=holds_a_run(Path(config.output_dir)))
        result.to_disk(records / f"{run.name}.json")


def load_records(records: Path) -> dict[str, RunResult]:
    """The experiment's records by run name, the borrowed ones included."""
    found = {name: RunResult.from_disk(path) for name, path in BORROWED.items() if path.is_file()}
    return found | {path.stem: RunResult.from_disk(path) for path in sorted(records.glob("*.json"))}


def trained_scores(result: RunResult) -> dict[str, float]:
    """The scores after the run's one stage (whatever the stage was named)."""
    return next(scores for label, scores in result.sts_by_stage.items() if label != "before")


def _cell(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def summarize(records: Path, out: Path) -> str:
    """table.md (mean ± std over the recorded seeds) and leakage.png, from the records alone."""
    rows: dict[tuple[str, str, str], list[RunResult]] = {}
    base: dict[str, dict[str, float]] = {}
    for name, result in load_records(records).items():
        model, level, loss, _ = name.split("-")
        rows.setdefault((model, level, loss), []).append(result)
        base.update({model: result.sts_by_stage["before"]} if "before" in result.sts_by_stage else {})
    header = ["model", "level", "loss", "train examples", "seeds", *SHORT, "avg", "gain over base"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for model in ("minilm", "mpnet"):
        if model in base:
            cells = " | ".join(f"{base[model][t]:.2f}" for t in [*TASKS, "avg"])
            lines.append(f"| {model} | — | none (base model) | — | — | {cells} | — |")
        for level in LEVELS:
            for loss in LOSSES:
                group = rows.get((model, level.value, loss), [])
                if not group:
                    continue
                scores = [trained_scores(result) for result in group]
                cells = " | ".join(_cell([s[t] for s in scores]) for t in [*TASKS, "avg"])
                gain = _cell([s["avg"] - base[model]["avg"] for s in scores]) if model in base else "—"
                examples = "/".join(sorted({str(r.stages[0].train_examples) for r in group}))
                lines.append(f"| {model} | {level.value} | {loss} | {examples} | {len(group)} | {cells} | {gain} |")
    text = "\n".join(lines) + "\n"
    write_text(out / "table.md", text)
    _plot(rows, base, out / "leakage.png")
    return text


def _plot(rows: dict[tuple[str, str, str], list[RunResult]], base: dict[str, dict[str, float]], path: Path) -> None:
    """Average over the seven tasks by leakage level, one line per loss (MiniLM), the base model dotted."""
    from pcctune.plotting import plt, save_figure

    figure, ax = plt.subplots(figsize=(7, 4.2))
    for loss in LOSSES:
        points = [
            (i, rows[("minilm", level.value, loss)])
            for i, level in enumerate(LEVELS)
            if ("minilm", level.value, loss) in rows
        ]
        if points:
            means = [statistics.mean(trained_scores(r)["avg"] for r in group) for _, group in points]
            ax.plot([i for i, _ in points], means, marker="o", label=loss)
    if "minilm" in base:
        ax.axhline(base["minilm"]["avg"], ls=":", c="gray", label="base model")
    ax.set_xticks(range(len(LEVELS)), [level.value for level in LEVELS])
    ax.set(
        xlabel="leakage filter level",
        ylabel="avg Spearman × 100 (7 STS tasks)",
        title="all-MiniLM-L6-v2 stage 2 by leakage level",
    )
    ax.legend()
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--summarize", action="store_true", help="only rebuild table.md and leakage.png from records/")
    parser.add_argument(
        "--quick", action="store_true", help="every code path on tiny random models, in a scratch folder"
    )
    parser.add_argument("--only", nargs="*", default=[], help="run only these runs (names as in records/)")
    parser.add_argument("--runs", type=Path, default=Path("runs/leakage"), help="folder of the run folders")
    args = parser.parse_args()
    records, out, quick = HERE / "records", HERE, None
    if args.quick:
        from pcctune.testing import tiny_workspace

        scratch = Path(tempfile.mkdtemp(prefix="leakage-quick-"))
        tiny = tiny_workspace(scratch)
        os.environ["PCCTUNE_DATA"] = str(tiny.senteval)
        records, out, args.runs = scratch / "records", scratch, scratch / "runs"
        quick = {"model": str(tiny.bert)}
        args.only = args.only or ["minilm-pair-contrastive-seed1", "minilm-pair-cosine_mse-seed1"]
        BORROWED.clear()
    if not args.summarize:
        records.mkdir(parents=True, exist_ok=True)
        train_missing(records, args.runs, args.only, quick)
    print(summarize(records, out))


if __name__ == "__main__":
    main()
