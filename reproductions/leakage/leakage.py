"""Does the Pearson loss beat sentence-transformers' losses when nothing leaks?

all-MiniLM-L6-v2 (already trained contrastively: a stage-I model) gets Pcc-tuning's stage 2 on STS-B train + SICK-R
train filtered at a leakage level (``pair``: the paper's filter; ``sentence``: no test sentence left;
docs/leakage.md), with each of five losses: Pearson (Pcc-tuning eq. 9), cosine-MSE (sentence-transformers'
``CosineSimilarityLoss``), CoSENT, AnglE and the contrastive stage 2 (Pcc-tuning §4.3: pairs scored 4 or more as
positives of InfoNCE). Every loss gets the same dev-only search (:data:`TRIALS`: learning rate, batch size, warm-up,
epochs); its winner by dev score then runs over seeds 1–3, and Pearson and the best other loss (by mean dev score,
never a test score) over seeds 4–5 too. Checkpoints, trials and the best other loss are chosen on dev sets filtered
at the cell's own level (:mod:`pcctune.data.dev`): at ``sentence`` SICK trial keeps too few pairs and is replaced by
a held-out 15 % of the training pairs. Every seed run is scored on the seven full test sets (SimCSE protocol) and
compared with :func:`pcctune.evaluation.compare.seed_difference` (95 % interval over seeds).

    python -m reproductions leakage --rerun        # the wide search's missing runs (reproductions.leakage.wide)
    python -m reproductions leakage --rerun -- --grid narrow   # this four-setting search's, in the order below
    python -m reproductions leakage --summarize    # table.md, verdict.md and leakage.png from the records

The four-setting search below is the narrow one, its records kept and read as rows of their own; the wide search
(:mod:`reproductions.leakage.wide`: eight settings, two search seeds, test seeds 1–5) is what ``--rerun`` trains.

Order (narrow): MiniLM at ``sentence`` (search, seeds 1–3, seeds 4–5), then at ``pair``; then the confound control (at
``pair``, STS-B and SICK subsampled to the sizes that survive ``sentence``, with the ``sentence`` winners), and
``normalized`` and ``near`` (the ``pair`` winners), Pearson and the best other loss over seeds 1–3. Each finished
run leaves its record in ``records/`` (search trials in ``records/search/``) and is never trained again; a run
folder left by a killed run is resumed; the table and verdict are rewritten after every run. Last, the seven
SentEval transfer tasks of the base model and of each loss's best model (by dev score) at each searched level
(``records/transfer/``): does fitting STS hurt the rest?
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from reproductions._common import ROOT, Measured, Rows, claim, kept, pair_counts, run_jobs, train_once

from pcctune.data.leakage import LeakageLevel
from pcctune.data.tasks import SEVEN_TASKS, SHORT_NAMES
from pcctune.data.transfer import TRANSFER_TASKS
from pcctune.evaluation.tables import mean_std_cell
from pcctune.io import write_text
from pcctune.results import EvalResult, RunResult, load_result
from pcctune.training.config import RunConfig

HERE = Path(__file__).resolve().parent
TASKS = list(SEVEN_TASKS)
SHORT = [SHORT_NAMES[task] for task in TASKS]
LOSSES = ("pearson", "cosine_mse", "cosent", "angle", "contrastive")
SEEDS, MORE_SEEDS = (1, 2, 3), (4, 5)

TRIALS: tuple[dict[str, Any], ...] = (
    {"learning_rate": 1.0e-5, "batch_size": 16, "warmup_ratio": 0.1, "epochs": 3},
    {"learning_rate": 3.0e-5, "batch_size": 32, "warmup_ratio": 0.0, "epochs": 2},
    {"learning_rate": 6.0e-5, "batch_size": 64, "warmup_ratio": 0.1, "epochs": 3},
    {"learning_rate": 1.2e-4, "batch_size": 32, "warmup_ratio": 0.0, "epochs": 1},
)
"""The search every loss gets at a level, the same four settings for each: learning rate from 1e-5 to 1.2e-4
(log-spaced), each paired with a batch size (16, 32, 64), a warm-up (0 or 10 %) and a number of epochs (1 to 3)
so that every value of each setting appears. The winner is the trial with the highest best dev score."""

FIXED_STAGE: dict[str, Any] = {
    "data": {"source": "stage2", "rescale_sick": True},
    "max_seq_length": 128,
    "dev": "sick-trial+stsb-dev",
    "contrastive_rule": ">=",
    "save_total_limit": 1,
    "logging_steps": 5,
}
"""Settings shared by every run: SICK-R rescaled to 0–5 (so a score of 4 means the same in both sources), the
contrastive stage's positives scored 4 or more (the rule that gives the paper's 1,543 pairs at ``pair``), the dev
set named as in the ready config and filtered at the run's level."""
EVALUATIONS_PER_EPOCH = 4


@dataclass(frozen=True)
class Cell:
    """One row of the grid: model, leakage level, loss, and training set (``stage2`` or the ``control``)."""

    model: str
    level: LeakageLevel
    loss: str
    data: str = "stage2"

    @property
    def name(self) -> str:
        short = "mpnet" if "mpnet" in self.model else "minilm"
        kind = "" if self.data == "stage2" else f"-{self.data}"
        return f"{short}-{self.level.value}{kind}-{self.loss}"


MINILM, MPNET = "all-MiniLM-L6-v2", "all-mpnet-base-v2"
BASE_RECORDS = {
    MINILM: HERE.parent / "minilm_stage2" / "records" / "ready.json",
    MPNET: HERE.parent / "baselines" / "records" / "mpnet_simcse.json",
}
"""Each model's own scores before training, under the same protocol and test files (a run's "before", an eval's)."""
SENTENCE, PAIR = LeakageLevel.sentence, LeakageLevel.pair


def records(args: argparse.Namespace) -> Path:
    return Path(args.output) / "records"


def best_dev(result: RunResult) -> float:
    value = result.stages[0].best_dev_spearman
    return float("-inf") if value is None else value


def steps_per_epoch(args: argparse.Namespace, cell: Cell, batch_size: int) -> int:
    return max(1, training_size(args.data, cell, args.runs, args.model is not None) // batch_size)


@cache
def training_size(data: str | None, cell: Cell, runs: Path, quick: bool) -> int:
    """The pairs a cell trains on (its held-out dev share left out)."""
    from pcctune.data.cache import senteval_folder
    from pcctune.training.datasets import train_dataset
    from pcctune.training.dev import holds_out

    stage = config_of(cell, TRIALS[0], 1, runs / "size", data, quick).stages[0]
    senteval = senteval_folder(data)
    return len(train_dataset(stage, senteval, holdout=holds_out(stage, senteval)))


def config_of(
    cell: Cell, settings: dict[str, Any], seed: int, output: Path, data: str | None, quick: bool, model: str = ""
) -> RunConfig:
    """The run of ``cell`` with a trial's ``settings`` at ``seed``, into ``output``."""
    stage = {"name": cell.loss, "loss": cell.loss, **FIXED_STAGE, **settings}
    stage["data"] = {**stage["data"], "leakage": cell.level.value}
    if cell.data == "control":
        stage["data"] = {"source": "pairs", "path": str(control_file(data, output.parent)), "leakage": "pair"}
    if quick:  # tiny random model, miniature data: two steps, dev on SICK trial's few pairs
        stage |= {"batch_size": 2, "epochs": 1, "max_steps": 2, "eval_steps": 1, "contrastive_threshold": 0.0}
        stage |= {"dev": "sick-trial"}
    payload = {"model": model or cell.model, "seed": seed, "output_dir": str(output), "evaluate_before": False}
    return RunConfig.model_validate(payload | ({"data_dir": data} if data else {}) | {"stages": [stage]})


def control_file(data: str | None, runs: Path) -> Path:
    """The confound control's training set: the ``pair``-filtered stage-2 set subsampled (seeded) to the number of
    STS-B and of SICK pairs that survive ``sentence``: the same size and mix, test sentences present."""
    from pcctune.data.cache import senteval_folder
    from pcctune.data.stage2 import build_stage2_set, save_pairs_jsonl

    path = runs / "control_pairs.jsonl"
    if not path.is_file():
        senteval = senteval_folder(data)
        pair, sentence = (build_stage2_set(senteval, level, rescale_sick=True) for level in (PAIR, SENTENCE))
        chosen = []
        for source in ("stsb", "sick"):
            count = sum(p.source == source for p in sentence.pairs)
            chosen += random.Random(0).sample([p for p in pair.pairs if p.source == source], count)
        save_pairs_jsonl(chosen, path)
    return path


def winner(args: argparse.Namespace, cell: Cell) -> dict[str, Any] | None:
    """The trial settings with the best dev score, once every trial of the cell has a record."""
    results = [kept(records(args) / "search" / f"{cell.name}-trial{k}.json") for k in range(len(trials(args)))]
    if any(result is None for result in results):
        return None
    scores = [best_dev(result) for result in results if result is not None]
    return trials(args)[scores.index(max(scores))]


def trials(args: argparse.Namespace) -> tuple[dict[str, Any], ...]:
    return TRIALS[:1] if args.model else TRIALS


def seeds(args: argparse.Namespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return ((1,), ()) if args.model else (SEEDS, MORE_SEEDS)


def seed_results(args: argparse.Namespace, cell: Cell) -> dict[int, RunResult]:
    found = {seed: kept(records(args) / f"{cell.name}-seed{seed}.json") for seed in (*SEEDS, *MORE_SEEDS)}
    return {seed: result for seed, result in found.items() if result is not None}


def best_other(args: argparse.Namespace, level: LeakageLevel, losses: tuple[str, ...]) -> str | None:
    """The loss other than Pearson with the best mean dev score over seeds 1–3, once all have run."""
    means = {}
    for loss in losses[1:]:
        results = seed_results(args, Cell(MINILM, level, loss))
        if not all(seed in results for seed in seeds(args)[0]):
            return None
        means[loss] = statistics.mean(best_dev(results[seed]) for seed in seeds(args)[0])
    return max(means, key=means.__getitem__) if means else None


def plan(args: argparse.Namespace) -> Iterator[tuple[Cell, dict[str, Any], int, bool]]:
    """The next runs, as far as the records decide them: (cell, settings, seed, scored on the test sets)."""
    losses = tuple(args.losses)
    first, more = seeds(args)
    for level in args.levels:
        cells = [Cell(MINILM, level, loss) for loss in losses]
        for cell in cells:
            for k, settings in enumerate(trials(args)):
                yield cell, settings | {"trial": k}, 1, False
        for cell in cells:
            chosen = winner(args, cell)
            if chosen is not None:
                for seed in first:
                    yield cell, chosen, seed, True
        other = best_other(args, level, losses)
        if other is not None:
            for loss in ("pearson", other):
                for seed in more:
                    yield Cell(MINILM, level, loss), winner(args, Cell(MINILM, level, loss)) or {}, seed, True
    yield from neighbours(args, losses)


def neighbours(args: argparse.Namespace, losses: tuple[str, ...]) -> Iterator[tuple[Cell, dict[str, Any], int, bool]]:
    """The cells that reuse MiniLM's winners at their nearest searched level, Pearson and the best other loss: the
    control (``sentence``'s: the same training size), ``normalized`` and ``near`` (``pair``'s), then all-mpnet-base-v2
    at ``sentence`` and at ``pair`` (the slowest cells: last)."""
    if args.model:
        return
    for searched, cells in (
        (SENTENCE, [(MINILM, "control", PAIR)]),
        (PAIR, [(MINILM, "stage2", LeakageLevel.normalized), (MINILM, "stage2", LeakageLevel.near)]),
        (SENTENCE, [(MPNET, "stage2", SENTENCE)]),
        (PAIR, [(MPNET, "stage2", PAIR)]),
    ):
        other = best_other(args, searched, losses)
        if other is None:
            continue
        for model, data, level in cells:
            for loss in ("pearson", other):
                settings = winner(args, Cell(MINILM, searched, loss))
                for seed in SEEDS:
                    yield Cell(model, level, loss, data), settings or {}, seed, True


def missing_runs(args: argparse.Namespace) -> Iterator[tuple[str, RunConfig, Path, bool]]:
    """(name, config, record, scored on the test sets) of each planned run that has no record yet."""
    for cell, settings, seed, score in plan(args):
        record = record_path(args, cell, settings, seed, score)
        if record.is_file():
            continue
        stage_settings = {key: value for key, value in settings.items() if key != "trial"}
        per_epoch = steps_per_epoch(args, cell, stage_settings.get("batch_size", 32))
        stage_settings["eval_steps"] = max(1, per_epoch // EVALUATIONS_PER_EPOCH)
        name = record.stem
        config = config_of(cell, stage_settings, seed, args.runs / name, args.data, bool(args.model), args.model or "")
        yield name, config, record, score


def train_missing(args: argparse.Namespace) -> None:
    """Train the planned runs that have no record yet (at most ``--max-runs``), one at a time (``--jobs N``: up to N
    at once), rewriting the table and verdict after each."""
    if args.jobs > 1:
        train_in_parallel(args)
        return
    done = 0
    while args.max_runs is None or done < args.max_runs:
        transfer_missing(args)
        todo = next(missing_runs(args), None)
        if todo is None:
            return
        name, config, record, score = todo
        print(f"[{done + 1}] {name}", flush=True)
        train_once(config, record, score)
        done += 1
        if score and not args.model:
            write_summary(args)


def train_in_parallel(args: argparse.Namespace) -> None:
    """``--jobs N``: up to N runs and transfer evaluations at once (:func:`reproductions._common.run_jobs`), each
    started as soon as the records decide it (a seed run once its cell's trials have all run). The runs' settings
    and records are those of the sequential runner; only the order in which they finish differs."""
    after = None if args.model else lambda: write_summary(args)
    run_jobs(lambda: ready_jobs(args), args.jobs, args.max_runs, after, lambda name: not name.startswith("transfer "))


def ready_jobs(args: argparse.Namespace) -> Iterator[tuple[Any, ...]]:
    """(name, function, its arguments) of each job the records allow now: transfer evaluations, then runs."""
    for name, model, record in missing_transfers(args):
        yield f"transfer {name}", transfer_once, model, record, args.data
    for name, config, record, score in missing_runs(args):
        yield name, train_once, config, record, score


def transfer_models(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """(record name, model) of each SentEval transfer evaluation: the base model, then each loss's best model by dev
    score at each searched level among its first seeds (1–3), once they have all run."""
    yield "base", MINILM
    first = seeds(args)[0]
    for level in args.levels:
        for loss in args.losses:
            cell = Cell(MINILM, level, loss)
            results = seed_results(args, cell)
            if not all(seed in results for seed in first):
                continue
            best = max(first, key=lambda seed: best_dev(results[seed]))
            yield f"{cell.name}-seed{best}", results[best].stages[0].final_dir


def missing_transfers(args: argparse.Namespace) -> Iterator[tuple[str, str, Path]]:
    """(record name, model, record) of each model of :func:`transfer_models` without a transfer record; a model
    whose run folder is gone (another machine) is left out, and said so."""
    if args.model:
        return
    for name, model in transfer_models(args):
        record = records(args) / "transfer" / f"{name}.json"
        if record.is_file():
            continue
        if name != "base" and not Path(model).is_dir():
            say_left_out(name, model)
            continue
        yield name, model, record


@cache
def say_left_out(name: str, model: str) -> None:
    """Say once per process (``--jobs`` asks again at every refill of its pool) that a transfer is left out."""
    print(f"[transfer] {name}: its model {model} is not on this machine; left out", flush=True)


def transfer_missing(args: argparse.Namespace) -> None:
    """What stage 2 costs elsewhere: the seven SentEval transfer tasks of each model of :func:`transfer_models`
    (``records/transfer/NAME.json``, scikit-learn's probe), base model included, as soon as a searched level's first
    seeds have all run."""
    for name, model, record in missing_transfers(args):
        print(f"[transfer] {name}", flush=True)
        transfer_once(model, record, args.data)
        write_summary(args)


def transfer_once(model: str, record: Path, data: str | None) -> None:
    """``pcctune eval MODEL --tasks transfer`` into ``record``."""
    from reproductions._common import pcctune

    pcctune(["eval", model, "--tasks", "transfer", "--output", str(record), *(["--data", data] * bool(data))])


def record_path(args: argparse.Namespace, cell: Cell, settings: dict[str, Any], seed: int, score: bool) -> Path:
    if score:
        return records(args) / f"{cell.name}-seed{seed}.json"
    return records(args) / "search" / f"{cell.name}-trial{settings['trial']}.json"


def base_scores(model: str = MINILM) -> dict[str, float]:
    """``model``'s seven test scores and their average before training (``BASE_RECORDS``)."""
    record = load_result(BASE_RECORDS[model])
    return record.sts_by_stage["before"] if isinstance(record, RunResult) else record.sts


def row_of(name: str, result: RunResult, search: dict[str, Any]) -> dict[str, Any]:
    """One seed run's row: what it was, its dev and test scores, its settings and what it cost."""
    scores = next(scores for label, scores in result.sts_by_stage.items() if label != "before")
    stage = result.stages[0]
    cell, seed = name.rsplit("-seed", 1)
    model, level, *kind, loss = cell.split("-", 3) if "-control-" in cell else [*cell.split("-", 2)]
    row = {"label": name, "cell": cell, "model": model, "level": level, "loss": loss, "seed": int(seed)}
    row |= {"data": "control" if kind else "stage2", "train_examples": stage.train_examples}
    row |= {"best_dev": stage.best_dev_spearman, "dev_pairs": stage.dev_pairs, "settings": search}
    row |= {"train_seconds": stage.wall_time_s, "cpu_seconds": stage.cpu_time_s, "pairs": pair_counts(result)}
    return row | {"sts": scores}


def collect(args: argparse.Namespace) -> Rows:
    rows = []
    for path in sorted(records(args).glob("*-seed*.json")):
        result = RunResult.from_disk(path)
        stage = result.config["stages"][0]
        search = {key: stage[key] for key in ("learning_rate", "batch_size", "warmup_ratio", "epochs")}
        rows.append(row_of(path.stem, result, search))
    return rows


def search_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every search trial's settings and best dev score."""
    rows = []
    for path in sorted((records(args) / "search").glob("*.json")):
        cell, trial = path.stem.rsplit("-trial", 1)
        rows.append({"cell": cell, "trial": int(trial), "best_dev": best_dev(RunResult.from_disk(path))})
    return rows


def measure(args: argparse.Namespace) -> Measured:
    if args.model:
        args.runs = Path(args.output) / "runs"
    if args.grid == "narrow" or args.model:  # --quick (a model given) runs both grids' paths
        train_missing(args)
    if args.grid == "wide" or args.model:
        from reproductions.leakage import wide

        wide.train_missing(args, None if args.model else lambda: write_summary(args))
    if not args.model:
        write_summary(args)
    rows = collect(args)
    settings = (
        "all-MiniLM-L6-v2's stage 2 on the stage-2 set filtered at each level (SICK-R rescaled to 0-5), five losses "
        "each searched alike on dev (the narrow search: four settings; the wide search: eight Sobol points, two search "
        "seeds at sentence and for its control, one at the pair-sized levels), winners over test seeds; SimCSE "
        "protocol on the seven full test sets; "
        "the models before training from " + " and ".join(str(path.relative_to(ROOT)) for path in BASE_RECORDS.values())
    )
    return Measured(rows, settings, summary_details(args))


def summary_details(args: argparse.Namespace) -> dict[str, Any]:
    """What the table and verdict read besides the seed runs: the search's trials and the transfer scores, and the
    wide search's (:func:`reproductions.leakage.wide.details`)."""
    from reproductions.leakage import wide

    found = {"search": search_rows(args), "trials": list(TRIALS), "transfer": transfer_scores(args)}
    return found | {"wide": wide.details(args)}


def transfer_scores(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Each transfer record's accuracy per task and its average, by record name, the base model first."""
    paths = sorted((records(args) / "transfer").glob("*.json"), key=lambda path: (path.stem != "base", path.stem))
    return {path.stem: dict(EvalResult.from_disk(path).transfer or {}) for path in paths}


def transfer_table(scores: dict[str, dict[str, float]]) -> str:
    """Accuracy % of the seven transfer tasks (MRPC: accuracy) and the average minus the base model's."""
    header = ["model", *TRANSFER_TASKS, "avg", "avg − base"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    base = scores.get("base", {}).get("avg")
    for name, found in scores.items():
        change = "—" if base is None or name == "base" else f"{found['avg'] - base:+.2f}"
        values = " | ".join(f"{found[task]:.2f}" for task in [*TRANSFER_TASKS, "avg"])
        lines.append(f"| {'base model' if name == 'base' else name} | {values} | {change} |")
    return "\n".join(lines)


def transfer_verdicts(scores: dict[str, dict[str, float]]) -> list[str]:
    """Per searched level: each loss's best model's transfer average minus the base model's (one model each)."""
    if "base" not in scores:
        return []
    base = scores["base"]["avg"]
    lines = []
    for level in (SENTENCE, PAIR):
        prefix = f"minilm-{level.value}-"
        changes = [
            f"{name.removeprefix(prefix).rsplit('-seed', 1)[0]} {found['avg'] - base:+.2f}"
            for name, found in scores.items()
            if name.startswith(prefix)
        ]
        if changes:
            lines.append(
                f"- **transfer, {level.value}** (seven SentEval tasks, scikit-learn's probe; each loss's best model by "
                f"dev, one model each, no interval): average minus the base model's {base:.2f}: " + ", ".join(changes)
            )
    return lines


def _cell_text(values: list[float]) -> str:
    return mean_std_cell(values) if len(values) > 1 else f"{values[0]:.2f}"


def groups(rows: Rows) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["cell"], []).append(row)
    return found


def base_rows(rows: Rows) -> list[str]:
    """The table's rows of the models before training: all-MiniLM-L6-v2's, and all-mpnet-base-v2's once it has
    rows."""
    lines = []
    for model in (MINILM, *([MPNET] if any(row["model"] == "mpnet" for row in rows) else [])):
        base = base_scores(model)
        scores = " | ".join(f"{base[task]:.2f}" for task in [*TASKS, "avg"])
        lines.append(f"| {model} before training | — | — | — | — | {scores} | — |")
    return lines


def table(rows: Rows, details: dict[str, Any]) -> str:
    """Per cell: training pairs, dev pairs, seeds, mean dev, the seven tasks and the average (mean ± std over
    seeds), and the winning settings; then the transfer tasks' table where ``details`` has their scores."""
    header = ["cell", "train pairs", "dev pairs", "seeds", "dev", *SHORT, "avg", "lr / batch / warm-up / epochs"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += base_rows(rows)
    for cell, group in groups(rows).items():
        cells = " | ".join(_cell_text([r["sts"][task] for r in group]) for task in [*TASKS, "avg"])
        dev = _cell_text([100 * r["best_dev"] for r in group])
        dev_pairs = "+".join(f"{n}" for n in group[0]["dev_pairs"].values()) or "—"
        s = group[0]["settings"]
        chosen = f"{s['learning_rate']:.1e} / {s['batch_size']} / {s['warmup_ratio']:g} / {s['epochs']:g}"
        lines.append(
            f"| {cell} | {group[0]['train_examples']} | {dev_pairs} | {len(group)} | {dev} | {cells} | {chosen} |"
        )
    if details.get("transfer"):
        lines += ["", "Transfer tasks, accuracy %:", "", transfer_table(details["transfer"])]
    if "wide" in details:
        from reproductions.leakage import wide

        lines += ["", wide.table(details["wide"])]
    return "\n".join(lines)


def seed_averages(runs: Rows) -> dict[int, float]:
    """Each run's seven-task average by its seed: one side of :func:`pcctune.evaluation.compare.seed_difference`."""
    return {r["seed"]: r["sts"]["avg"] for r in runs}


def verdicts(rows: Rows) -> list[str]:
    """At each level and for the control: Pearson against the best other loss (by mean dev), the difference of the
    seven-task average with its 95 % interval over paired seeds, in words; then against each other loss alike."""
    from pcctune.evaluation.compare import seed_difference

    found = groups(rows)
    lines = []
    prefixes = ("minilm-sentence", "minilm-pair", "minilm-pair-control", "minilm-normalized", "minilm-near")
    for prefix in (*prefixes, "mpnet-sentence", "mpnet-pair"):
        cells = {cell.removeprefix(prefix + "-"): group for cell, group in found.items() if cell.startswith(prefix)}
        cells = {loss: group for loss, group in cells.items() if loss in LOSSES}
        if "pearson" not in cells or len(cells) < 2:
            continue
        dev_means = {loss: statistics.mean(r["best_dev"] for r in g) for loss, g in cells.items() if loss != "pearson"}
        other = max(dev_means, key=dev_means.__getitem__)
        pearson, rival = seed_averages(cells["pearson"]), seed_averages(cells[other])
        if len(pearson) < 2 or len(rival) < 2:
            continue
        difference = seed_difference(rival, pearson)
        lines.append(f"- **{prefix}** (best other loss on dev: {other}): {difference.sentence(other, 'Pearson')}")
        for loss in sorted(set(cells) - {"pearson", other}):
            runs = seed_averages(cells[loss])
            if len(runs) >= 2:
                lines.append(f"  - against {loss}: {seed_difference(runs, pearson).sentence(loss, 'Pearson')}")
    return lines


LABELS = {
    "pearson": "Pearson (Pcc-tuning)",
    "cosine_mse": "cosine-MSE (ST's CosineSimilarityLoss)",
    "cosent": "CoSENT",
    "angle": "AnglE",
    "contrastive": "contrastive stage 2 (§4.3)",
}
"""Each loss's row label in the front page's table."""


def readme_rows(levels: tuple[str, ...] = ("sentence", "pair")) -> dict[str, list[str]]:
    """The front page's table, from the records: its header (``loss``: which search each level comes from), then per
    loss its seeds (``a / b`` where the levels differ) and at each level the seven-task average (mean ± std) and
    Pearson − the loss with its 95 % interval over paired seeds. A level comes from the wide search once that block
    is complete, with Holm's interval over the planned family beside the uncorrected one; until then from the
    narrow search."""
    from reproductions.leakage import wide

    from pcctune.evaluation.compare import seed_difference

    args = argparse.Namespace(output=HERE, model=None, losses=list(LOSSES))
    found = wide.details(args)
    complete = wide.complete_blocks(found["progress"])
    corrected = wide.family(found["rows"], complete)
    narrow, searched = groups(collect(args)), groups(found["rows"])
    header = ["seeds"]
    for level in levels:
        holm = f" [Holm over {wide.planned_comparisons()}]" if level in complete else ""
        search = "wide" if level in complete else "narrow"
        header += [f"`{level}` avg ({search} search)", f"Pearson − loss [95 %]{holm}"]
    rows = {"loss": header}
    averages = {
        loss: [
            seed_averages((searched if level in complete else narrow).get(f"minilm-{level}-{loss}", []))
            for level in levels
        ]
        for loss in LOSSES
    }
    for loss, by_level in averages.items():
        if not all(by_level):
            continue
        cells = [" / ".join(dict.fromkeys(str(len(runs)) for runs in by_level))]
        for level, runs, pearson in zip(levels, by_level, averages["pearson"], strict=True):
            difference = "—"
            if loss != "pearson" and pearson:
                d = seed_difference(runs, pearson)
                difference = f"{d.mean:+.2f}" + (f" [{d.low:+.2f}, {d.high:+.2f}]" if d.low is not None else "")
                if (level, loss) in corrected:
                    holm = corrected[(level, loss)].corrected
                    difference += f" [{holm.low:+.2f}, {holm.high:+.2f}]"
            cells += [_cell_text(list(runs.values())), difference]
        rows[LABELS[loss]] = cells
    return rows


def write_summary(args: argparse.Namespace) -> None:
    """table.md, verdict.md and the plot, from the records as they are now (the search's rows go into runs.json)."""
    rows = collect(args)
    if not rows:
        return
    found = summary_details(args)
    write_text(HERE / "table.md", table(rows, found) + "\n")
    from reproductions.leakage import wide

    lines = verdicts(rows) + transfer_verdicts(found["transfer"]) + wide.verdicts(found["wide"])
    write_text(HERE / "verdict.md", "\n".join(lines) + "\n")
    plot(rows, {}, HERE / "leakage.png")


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """all-MiniLM-L6-v2's seven-task average per loss and level: each seed a dot, the mean a bar, the base model
    dotted."""
    from pcctune.plotting import plt, save_figure

    figure, ax = plt.subplots(figsize=(8, 4.2))
    levels = [level.value for level in LeakageLevel]
    for offset, loss in enumerate(LOSSES):
        for x, level in enumerate(levels):
            key = ("minilm", level, loss, "stage2")
            values = [r["sts"]["avg"] for r in rows if (r["model"], r["level"], r["loss"], r["data"]) == key]
            if values:
                position = x + (offset - 2) * 0.15
                ax.bar(position, statistics.mean(values), width=0.14, color=f"C{offset}", alpha=0.5)
                ax.plot([position] * len(values), values, "k.", ms=3)
        ax.bar([], [], color=f"C{offset}", alpha=0.5, label=loss)
    ax.axhline(base_scores()["avg"], ls=":", c="gray", label="base model")
    low = min([r["sts"]["avg"] for r in rows] + [base_scores()["avg"]]) - 0.5
    ax.set_ylim(bottom=low)
    ax.set_xticks(range(len(levels)), levels)
    ax.set(xlabel="leakage filter level", ylabel="avg Spearman × 100, 7 STS tasks", title="all-MiniLM-L6-v2 stage 2")
    ax.legend(fontsize=8, ncol=3)
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-runs", type=int, default=None, help="stop after training this many runs")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own process (a GPU machine)")
    parser.add_argument("--runs", type=Path, default=Path("runs/leakage"), help="folder of the run folders")
    parser.add_argument("--model", default=None, help="replace every run's model (--quick: a tiny one)")
    parser.add_argument("--grid", choices=["wide", "narrow"], default="wide", help="which search's runs to train")
    parser.add_argument("--cells", nargs="*", default=None, help="wide: the blocks to run, in order (default all)")
    parser.add_argument("--levels", nargs="*", type=LeakageLevel, default=[SENTENCE, PAIR], help="narrow: levels")
    parser.add_argument("--losses", nargs="*", default=list(LOSSES), help="the losses, Pearson first")


QUICK = {"model": "{bert}", "levels": [PAIR], "cells": ["pair"], "losses": ["pearson", "cosine_mse"]}
"""--quick: both grids' whole paths on a tiny random model, two losses at ``pair``: the narrow grid's trials and one
test seed, the wide search's one point, one search seed and one test seed."""
BENCHMARK = claim(__name__, quick=QUICK, plot=None)
