"""The narrow search: four settings per loss (:data:`TRIALS`), searched with seed 1, the winners over seeds 1–3 and
Pearson and the best other loss over seeds 4–5; the cells without a search of their own reuse the winners of their
nearest searched level. Its records stay, read as rows of their own (``python -m reproductions leakage --rerun --
--grid narrow`` trains what is missing).

Order: MiniLM at ``sentence`` (search, seeds 1–3, seeds 4–5), then at ``pair``; then the confound control (at
``pair``, STS-B and SICK subsampled to the sizes that survive ``sentence``, with the ``sentence`` winners), and
``normalized`` and ``near`` (the ``pair`` winners), Pearson and the best other loss over seeds 1–3. Each finished
run leaves its record in ``records/`` (search trials in ``records/search/``) and is never trained again; a run
folder left by a killed run is resumed. Last, the seven SentEval transfer tasks of the base model and of each loss's
best model (by dev score) at each searched level (``records/transfer/``)."""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from reproductions._common import Rows, kept, run_jobs, train_once
from reproductions.leakage.cells import (
    EVALUATIONS_PER_EPOCH,
    MINILM,
    MPNET,
    PAIR,
    SENTENCE,
    Cell,
    best_dev,
    config_of,
    records,
    row_of,
    say_left_out,
)

from pcctune.data.leakage import LeakageLevel
from pcctune.results import EvalResult, RunResult
from pcctune.training.config import RunConfig

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


def steps_per_epoch(args: argparse.Namespace, cell: Cell, batch_size: int) -> int:
    return max(1, training_size(args.data, cell, args.runs, args.model is not None) // batch_size)


@cache
def training_size(data: str | None, cell: Cell, runs: Path, quick: bool) -> int:
    """The pairs a cell trains on (its held-out dev share left out)."""
    from pcctune.data.cache import senteval_folder
    from pcctune.training.datasets import train_dataset
    from pcctune.training.dev import holds_out

    stage = run_config(cell, TRIALS[0], 1, runs / "size", data, quick).stages[0]
    senteval = senteval_folder(data)
    return len(train_dataset(stage, senteval, holdout=holds_out(stage, senteval)))


def run_config(
    cell: Cell, settings: dict[str, Any], seed: int, output: Path, data: str | None, quick: bool, model: str = ""
) -> RunConfig:
    """:func:`~reproductions.leakage.cells.config_of`, the control cell training on :func:`control_file`'s pairs
    (beside the run folders) instead of the stage-2 set."""
    if cell.data == "control":
        settings = settings | {"data": {"source": "pairs", "path": str(control_file(data, output.parent))}}
    return config_of(cell, settings, seed, output, data, quick, model)


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
        config = run_config(cell, stage_settings, seed, args.runs / name, args.data, bool(args.model), args.model or "")
        yield name, config, record, score


def train_missing(args: argparse.Namespace, after: Callable[[], None] | None) -> None:
    """Train the planned runs and transfer evaluations that have no record yet (at most ``--max-runs`` runs), one at
    a time (``--jobs N``: up to N at once, :func:`reproductions._common.run_jobs`), each started as soon as the
    records decide it (a seed run once its cell's trials have all run), ``after`` called after each."""
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


def transfer_once(model: str, record: Path, data: str | None) -> None:
    """``pcctune eval MODEL --tasks transfer`` into ``record``."""
    from reproductions._common import pcctune

    pcctune(["eval", model, "--tasks", "transfer", "--output", str(record), *(["--data", data] * bool(data))])


def record_path(args: argparse.Namespace, cell: Cell, settings: dict[str, Any], seed: int, score: bool) -> Path:
    if score:
        return records(args) / f"{cell.name}-seed{seed}.json"
    return records(args) / "search" / f"{cell.name}-trial{settings['trial']}.json"


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


def transfer_scores(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Each transfer record's accuracy per task and its average, by record name, the base model first."""
    paths = sorted((records(args) / "transfer").glob("*.json"), key=lambda path: (path.stem != "base", path.stem))
    return {path.stem: dict(EvalResult.from_disk(path).transfer or {}) for path in paths}
