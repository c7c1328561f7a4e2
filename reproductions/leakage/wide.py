"""The wide search: every loss searched over the same eight settings (:data:`~reproductions.leakage.design.DESIGN`)
at each level, each setting scored on dev by search seeds that are never test seeds (two at ``sentence`` and for its
control, one at the pair-sized levels), its winner then over test seeds 1–5; read with Holm's correction over the
front page's family of comparisons.

Cells, in the order they run (:data:`BLOCKS`): all-MiniLM-L6-v2 at ``sentence``; the control (``sentence``'s
twin: the same numbers of STS-B and of SICK pairs, trained and held out, drawn from the ``pair``-level set, its file
``control_pairs.jsonl`` committed beside the records); at ``pair``; ``normalized`` and ``near`` (Pearson and
cosine-MSE, each searched at its own level); last all-mpnet-base-v2 at ``sentence`` and ``pair`` with MiniLM's
winners of that level (Pearson, cosine-MSE, CoSENT; test seeds 1–3). Each setting's score is the mean of the best dev
scores of its block's search seeds (:data:`SEARCH_SEEDS`, or :data:`ONE_SEARCH_SEED`); a winner whose best
checkpoint is its run's last step is flagged (it may want more training). Every choice is made on dev data filtered
at the cell's own level (the control's: its own held-out 15 % and STS-B dev at ``pair``, as ``sentence``'s is its
held-out 15 % and STS-B dev at ``sentence``).

Records: ``records/wide/search/CELL-pointK-seedS.json`` (search), ``records/wide/CELL-seedN.json`` (test seeds),
``records/wide/transfer/`` (the base model under each of :data:`PROBE_SEEDS`, the noise floor, and each loss's best
model by dev at each level that has transfer tasks).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from reproductions._common import kept, run_jobs, train_once
from reproductions.leakage import growth, transfer_jobs
from reproductions.leakage.cells import (
    EVALUATIONS_PER_EPOCH,
    LOSSES,
    MINILM,
    MPNET,
    PAIR,
    SENTENCE,
    Cell,
    best_dev,
    config_of,
    row_of,
)
from reproductions.leakage.design import DESIGN
from reproductions.leakage.growth import GrownPoint, Point

from pcctune.data.leakage import LeakageLevel
from pcctune.training.config import RunConfig

SEARCH_SEEDS = (101, 102)
"""The seeds each setting is searched with: apart from every test seed."""
TEST_SEEDS = (1, 2, 3, 4, 5)
MPNET_SEEDS = (1, 2, 3)
PROBE_SEEDS = (1111, 1112, 1113)
"""The transfer probe's seeds the base model is scored under (its noise floor); 1111 is SentEval's, every trained
model's."""
CONTROL_SEED = 0
CONTROL_FILE = "control_pairs.jsonl"
CONTROL_DEV = ["holdout", "stsb-dev-filtered"]
"""The control's dev set: its own held-out 15 % and STS-B dev, as ``sentence``'s is once SICK trial keeps too few."""
WIDE = "wide"
GROWN = "grown"
"""The folder of the test runs of a winner the grown search changed."""
HALF_RATE_BLOCKS = ("sentence", "control")
"""The blocks whose growth also tries half the winner's learning rate: the ``sentence``-sized training sets."""
GROWTH_ORDER = ("pearson", "cosent", "angle", "cosine_mse", "contrastive")
"""The order the losses of a block grow in: the front page's first comparisons first."""


@dataclass(frozen=True)
class Block:
    """A group of cells run together: one model, one level and training set, its losses; searched, or on MiniLM's
    winners at its level."""

    name: str
    model: str
    level: LeakageLevel
    data: str
    losses: tuple[str, ...]
    searched: bool = True
    transfer: bool = False
    search_seeds: tuple[int, ...] = SEARCH_SEEDS

    def cells(self, losses: list[str]) -> list[Cell]:
        return [Cell(self.model, self.level, loss, self.data) for loss in self.losses if loss in losses]


TWO = ("pearson", "cosine_mse")
ONE_SEARCH_SEED = SEARCH_SEEDS[:1]
"""The pair-sized levels' search: one seed a setting (their runs take 4–23 minutes each on a 2-core CPU)."""
BLOCKS = (
    Block("sentence", MINILM, SENTENCE, "stage2", LOSSES, transfer=True),
    Block("control", MINILM, PAIR, "control", LOSSES),
    Block("pair", MINILM, PAIR, "stage2", LOSSES, transfer=True, search_seeds=ONE_SEARCH_SEED),
    Block("normalized", MINILM, LeakageLevel.normalized, "stage2", TWO, search_seeds=ONE_SEARCH_SEED),
    Block("near", MINILM, LeakageLevel.near, "stage2", TWO, search_seeds=ONE_SEARCH_SEED),
    Block("mpnet-sentence", MPNET, SENTENCE, "stage2", (*TWO, "cosent"), searched=False),
    Block("mpnet-pair", MPNET, PAIR, "stage2", (*TWO, "cosent"), searched=False),
)
BY_NAME = {block.name: block for block in BLOCKS}


@dataclass(frozen=True)
class Run:
    """One planned run: its cell, the point it trains (a design point, or a grown one), its seed and whether it is
    scored on the test sets (a search run is not)."""

    cell: Cell
    point: Point
    seed: int
    scored: bool


def folder(args: argparse.Namespace) -> Path:
    return Path(args.output) / "records" / WIDE


def design(args: argparse.Namespace) -> tuple[dict[str, Any], ...]:
    return DESIGN[:1] if args.model else DESIGN


def block_of(cell: Cell) -> Block:
    """The searched block ``cell`` belongs to (MiniLM's, at its level and on its training set)."""
    return next(b for b in BLOCKS if b.searched and (b.model, b.level, b.data) == (cell.model, cell.level, cell.data))


def search_seeds(args: argparse.Namespace, cell: Cell) -> tuple[int, ...]:
    """The seeds ``cell``'s settings are searched with: its block's (one in ``--quick``)."""
    return SEARCH_SEEDS[:1] if args.model else block_of(cell).search_seeds


def scored_seeds(args: argparse.Namespace, block: Block) -> tuple[int, ...]:
    return (1,) if args.model else MPNET_SEEDS if block.model == MPNET else TEST_SEEDS


def record_path(args: argparse.Namespace, run: Run) -> Path:
    if run.scored:
        grown = folder(args) / GROWN if isinstance(run.point, str) else folder(args)
        return grown / f"{run.cell.name}-seed{run.seed}.json"
    return folder(args) / "search" / f"{run.cell.name}-point{run.point}-seed{run.seed}.json"


def point_score(args: argparse.Namespace, cell: Cell, point: Point) -> float | None:
    """A point's score: the mean best dev score of its search seeds, ``None`` until all have run."""
    found = [kept(record_path(args, Run(cell, point, seed, False))) for seed in search_seeds(args, cell)]
    results = [result for result in found if result is not None]
    return statistics.mean(map(best_dev, results)) if len(results) == len(found) else None


def best_of(args: argparse.Namespace, cell: Cell, points: list[Point]) -> Point | None:
    """The point of ``points`` with the best score once every one has run (the first of equals)."""
    scores = [point_score(args, cell, point) for point in points]
    if any(score is None for score in scores):
        return None
    found = [score for score in scores if score is not None]
    return points[found.index(max(found))]


def winner(args: argparse.Namespace, cell: Cell) -> int | None:
    """The design point with the best score, once every point of the cell has run (the first of equals)."""
    chosen = best_of(args, cell, list(range(len(design(args)))))
    return None if chosen is None else int(chosen)


def level_binds(args: argparse.Namespace, block: Block) -> bool:
    """Whether any cell of ``block`` binds (:func:`reproductions.leakage.growth.binds`), read once every cell's
    winner has run on all its test seeds."""
    verdicts = []
    for cell in block.cells(args.losses):
        chosen, found = winner(args, cell), scored_results(args, block, cell)
        if chosen is None or len(found) < len(scored_seeds(args, block)):
            return False
        last_steps = [last_step(result) for result in found.values()]
        verdicts.append(growth.binds(design(args)[chosen], last_steps, design(args)))
    return any(verdicts)


def grown_points(args: argparse.Namespace, block: Block, cell: Cell) -> list[str]:
    """The grown points of ``cell``, of a level that binds (:func:`level_binds`), as far as its records decide them:
    its winner's first growth; a winner at 4× grown to 8× once every point before has run."""
    chosen = winner(args, cell)
    if chosen is None:
        return []
    points = growth.first_growth(chosen, half_rate=block.name in HALF_RATE_BLOCKS)
    while True:
        labels = [point.label for point in points]
        best = final_point(args, cell, labels)
        further = GrownPoint.parse(best).grows_further if isinstance(best, str) else None
        if further is None or further in points:
            return labels
        points.append(further)


def final_point(args: argparse.Namespace, cell: Cell, grown: list[str]) -> Point | None:
    """``cell``'s winner among all its points, its design points and the ``grown`` ones, once every one has run."""
    return best_of(args, cell, [*range(len(design(args))), *grown])


def searched_cell(block: Block, cell: Cell) -> Cell:
    """The cell whose search chose ``cell``'s setting: itself, or MiniLM's at its level."""
    return cell if block.searched else Cell(MINILM, cell.level, cell.loss, cell.data)


def plan(args: argparse.Namespace, blocks: list[Block] | None = None) -> Iterator[Run]:
    """Every run of ``blocks`` (default: ``--cells``') as far as the records decide them, block by block: the
    search, then each cell's test seeds once its search has run."""
    for block in chosen_blocks(args) if blocks is None else blocks:
        cells = block.cells(args.losses)
        if block.searched:
            for cell in cells:
                for point in range(len(design(args))):
                    for seed in search_seeds(args, cell):
                        yield Run(cell, point, seed, False)
        for cell in cells:
            chosen = winner(args, searched_cell(block, cell))
            if chosen is not None:
                for seed in scored_seeds(args, block):
                    yield Run(cell, chosen, seed, True)
        yield from grown_runs(args, block, cells)


def grown_runs(args: argparse.Namespace, block: Block, cells: list[Cell]) -> Iterator[Run]:
    """The grown search's runs of ``block`` (:mod:`reproductions.leakage.growth`), loss by loss in
    :data:`GROWTH_ORDER`: each grown point on the block's search seeds, then a changed winner on the test seeds."""
    if not block.searched or not level_binds(args, block):
        return
    for cell in sorted(cells, key=lambda cell: GROWTH_ORDER.index(cell.loss)):
        labels = grown_points(args, block, cell)
        for label in labels:
            for seed in search_seeds(args, cell):
                yield Run(cell, label, seed, False)
        final = final_point(args, cell, labels)
        if isinstance(final, str):
            for seed in scored_seeds(args, block):
                yield Run(cell, final, seed, True)


def growth_settled(args: argparse.Namespace, block: Block) -> bool:
    """Whether ``block``'s grown search is decided and run: every cell's winner among all its points is decided and
    every grown run the records call for has its record (a level that does not bind grows nothing). Until then the
    level is read at every loss's first winner, never some losses at their grown winners and others at their first."""
    if not block.searched or not level_binds(args, block):
        return True
    cells = block.cells(args.losses)
    if any(final_point(args, cell, grown_points(args, block, cell)) is None for cell in cells):
        return False
    return all(record_path(args, run).is_file() for run in grown_runs(args, block, cells))


def chosen_blocks(args: argparse.Namespace) -> list[Block]:
    """The blocks ``--cells`` names (all by default), in :data:`BLOCKS`' order."""
    names = args.cells or list(BY_NAME)
    unknown = sorted(set(names) - set(BY_NAME))
    if unknown:
        raise SystemExit(f"error: no cells {', '.join(unknown)}; choose from {', '.join(BY_NAME)}")
    return [block for block in BLOCKS if block.name in names]


def config(args: argparse.Namespace, run: Run) -> RunConfig:
    """The run's config: the cell's level and training set, its design point, dev evaluated four times an epoch; its
    run folder named as its record (a changed winner's test run under ``grown/``, apart from the first winner's run
    of the same seed)."""
    data: dict[str, Any] = {}
    if run.cell.data == "control":
        path = control_file(args.data, Path(args.output) / CONTROL_FILE)
        data = {"data": {"source": "pairs", "path": str(path)}, "dev": CONTROL_DEV}
    cell, quick, model = Cell(run.cell.model, run.cell.level, run.cell.loss), bool(args.model), args.model or ""
    sizing = config_of(cell, design(args)[0] | data, 1, args.runs / "size", args.data, quick, model)  # any point's
    settings = growth.setting_of(run.point, design(args)) | data
    per_epoch = max(1, pairs_trained(sizing.stages[0].model_dump_json(), args.data) // settings["batch_size"])
    settings["eval_steps"] = max(1, per_epoch // EVALUATIONS_PER_EPOCH)
    record = record_path(args, run)
    output = args.runs / WIDE / (GROWN if record.parent.name == GROWN else "") / record.stem
    return config_of(cell, settings, run.seed, output, args.data, quick, model)


@cache
def pairs_trained(stage_json: str, data: str | None) -> int:
    """The examples a stage trains on (its held-out dev share left out): the same for every point of a cell, whose
    first point's stage is the key."""
    from pcctune.data.cache import senteval_folder
    from pcctune.training.config import StageConfig
    from pcctune.training.datasets import train_dataset
    from pcctune.training.dev import holds_out

    stage, senteval = StageConfig.model_validate_json(stage_json), senteval_folder(data)
    return len(train_dataset(stage, senteval, holdout=holds_out(stage, senteval)))


def control_file(data: str | None, path: Path) -> Path:
    """The control's training set, ``sentence``'s twin: from the ``pair``-level stage-2 set, seeded, as many STS-B
    and as many SICK pairs as ``sentence`` keeps, each count split as ``sentence``'s is between the pairs training
    holds out for dev (``pcctune.data.dev.in_holdout``) and the rest; the same size and mix, the same held-out 15 %,
    test sentences present. Built once; the committed file is the one every run reads."""
    from pcctune.data.cache import senteval_folder
    from pcctune.data.dev import in_holdout
    from pcctune.data.stage2 import build_stage2_set, save_pairs_jsonl

    if path.is_file():
        return path
    senteval = senteval_folder(data)
    pair, sentence = (build_stage2_set(senteval, level, rescale_sick=True) for level in (PAIR, SENTENCE))
    draw = random.Random(CONTROL_SEED)
    chosen = []
    for source in ("stsb", "sick"):
        for held in (False, True):
            count = sum(p.source == source and in_holdout(p) == held for p in sentence.pairs)
            chosen += draw.sample([p for p in pair.pairs if p.source == source and in_holdout(p) == held], count)
    save_pairs_jsonl(chosen, path)
    return path


def missing_runs(
    args: argparse.Namespace, blocks: list[Block] | None = None
) -> Iterator[tuple[str, RunConfig, Path, bool]]:
    """(name, config, record, scored) of each planned run of ``blocks`` without a record."""
    for run in plan(args, blocks):
        record = record_path(args, run)
        if not record.is_file():
            yield record.stem, config(args, run), record, run.scored


def ready_jobs(args: argparse.Namespace) -> Iterator[tuple[Any, ...]]:
    """Each job the records allow now, in the blocks' order; a block's transfer tasks (once its test seeds have
    run) after the next block's runs (``sentence``'s after the control's)."""
    chosen = chosen_blocks(args)
    for before, block in zip([None, *chosen], [*chosen, None], strict=True):
        for name, run_config, record, scored in missing_runs(args, [block] if block else []):
            yield name, train_once, run_config, record, scored
        for name, *job in missing_transfers(args, [before] if before else []):
            yield f"transfer {name}", *job


def train_missing(args: argparse.Namespace, after: Any) -> None:
    """Train every planned run and transfer evaluation without a record, one at a time (``--jobs N``: up to N at
    once), ``after`` called after each."""
    counted = lambda name: not name.startswith("transfer ")  # noqa: E731
    run_jobs(lambda: ready_jobs(args), args.jobs, args.max_runs, after, counted)


def scored_results(args: argparse.Namespace, block: Block, cell: Cell) -> dict[int, Any]:
    found = {seed: kept(folder(args) / f"{cell.name}-seed{seed}.json") for seed in scored_seeds(args, block)}
    return {seed: result for seed, result in found.items() if result is not None}


def winner_results(args: argparse.Namespace, block: Block, cell: Cell) -> tuple[str, dict[int, Any]]:
    """``cell``'s winner as far as its test runs go: the grown search's (tag ``-3x2``, its point) once that winner has
    run on every test seed and the level's growth is settled (:func:`growth_settled`), else the first search's (tag
    ``""``); with its test results by seed."""
    seeds = scored_seeds(args, block)
    grown = {seed: kept(folder(args) / GROWN / f"{cell.name}-seed{seed}.json") for seed in seeds}
    if block.searched and all(result is not None for result in grown.values()) and growth_settled(args, block):
        point = final_point(args, cell, grown_points(args, block, cell))
        check_trained_at(cell, point, growth.setting_of(point, design(args)) if point is not None else {}, grown)
        return f"-{point}", grown
    return "", scored_results(args, block, cell)


def check_trained_at(cell: Cell, point: Point | None, setting: dict[str, Any], results: dict[int, Any]) -> None:
    """Stop where a changed winner's test record trained another setting than ``cell``'s final point: its record's
    name holds the cell and seed, not the point, so a winner that changed again after its test runs would otherwise
    be read from the earlier winner's runs."""
    for seed, result in results.items():
        stage = result.config["stages"][-1]
        trained = {key: stage.get(key) for key in SETTING_KEYS}
        if any(not math.isclose(float(trained[key]), float(setting[key])) for key in SETTING_KEYS if key in setting):
            raise SystemExit(
                f"{cell.name} seed {seed}: its test record under {GROWN}/ trained {trained}, not its winner {point}'s "
                f"{setting}: move the record away to run the winner's test seeds"
            )


def transfer_models(args: argparse.Namespace, blocks: list[Block]) -> Iterator[tuple[str, str, int, Any]]:
    """(record name, model, probe seed, the run that trained it) of each of ``blocks`` with transfer tasks: the base
    model under each probe seed (the noise floor; no run) once a cell's test seeds have all run, then each such
    cell's winner's best model by dev (probe seed 1111): the grown search's winner once it has run on every test
    seed (its name tagged with its point, ``minilm-sentence-pearson-3x2-seed3``), before that the first search's."""
    if args.model:
        return
    for block in blocks:
        if not block.transfer:
            continue
        complete = {cell: winner_results(args, block, cell) for cell in block.cells(args.losses)}
        complete = {cell: found for cell, found in complete.items() if len(found[1]) == len(scored_seeds(args, block))}
        if complete:
            for seed in PROBE_SEEDS:
                yield f"base-probe{seed}", MINILM, seed, None
        for cell, (tag, found) in complete.items():
            best = max(found, key=lambda seed: best_dev(found[seed]))
            yield f"{cell.name}{tag}-seed{best}", found[best].stages[0].final_dir, PROBE_SEEDS[0], found[best]


def missing_transfers(args: argparse.Namespace, blocks: list[Block]) -> Iterator[tuple[Any, ...]]:
    """(name, function, its arguments) of each transfer evaluation of ``blocks`` without a record: of the model on
    this machine, or, where the run that made it left no model here, of that run trained again from its record into
    ``runs/…/again/`` (``transfer_jobs``)."""
    for name, model, seed, trained in transfer_models(args, blocks):
        record = folder(args) / "transfer" / f"{name}.json"
        if record.is_file():
            continue
        if trained is None or transfer_jobs.model_here(trained):
            yield name, transfer_jobs.transfer_once, model, record, args.data, seed
        else:
            again = args.runs / "again" / name
            yield name, transfer_jobs.train_again_then_transfer, trained, again, record, args.data, seed


def best_step(result: Any) -> int | None:
    """The step of a run's best dev checkpoint (``…/checkpoint-S``), or ``None`` where it kept none."""
    checkpoint = result.stages[0].best_checkpoint
    return int(checkpoint.rsplit("-", 1)[1]) if checkpoint else None


def last_step(result: Any) -> bool:
    """Whether a run's best checkpoint is its last step: its dev score might still have been rising."""
    stage = result.stages[0]
    settings = result.config["stages"][0]
    step = best_step(result)
    if step is None:
        return False
    steps = settings.get("max_steps", -1)
    if steps is None or steps <= 0:
        steps = int(settings["epochs"] * (stage.train_examples // settings["batch_size"]))
    return step >= steps


def first_evaluation(result: Any) -> bool:
    """Whether a run's best checkpoint is its first dev evaluation (its ``eval_steps``): a run that kept what it had
    before training, or barely more."""
    return best_step(result) == result.config["stages"][0]["eval_steps"]


SETTING_KEYS = ("learning_rate", "batch_size", "warmup_ratio", "epochs")
"""What a design or grown point sets in a stage: the fields that tell which point a record trained."""


def test_rows(args: argparse.Namespace, found: Path, points: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The rows of the test runs in ``found``, each with the point whose settings it trained (``points``: each
    cell's candidates by label, design points by index)."""
    from pcctune.results import RunResult

    rows = []
    for path in sorted(found.glob("*-seed*.json")):
        result = RunResult.from_disk(path)
        stage = result.config["stages"][0]
        settings = {key: stage[key] for key in SETTING_KEYS}
        row = row_of(path.stem, result, settings)
        candidates = [*enumerate(design(args)), *points.get(row["cell"], [])]
        chosen = next((point for point, setting in candidates if setting == settings), None)
        rows.append(
            row | {"point": chosen, "last_step": last_step(result), "first_evaluation": first_evaluation(result)}
        )
    return rows


def search_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every search run's row: its cell, point (a design point's index, or a grown point's label), seed, best dev
    score, whether that was its last step, its settings and training time."""
    from pcctune.results import RunResult

    search = []
    for path in sorted((folder(args) / "search").glob("*.json")):
        cell, rest = path.stem.rsplit("-point", 1)
        label, seed = rest.split("-seed")
        point: Point = int(label) if label.isdigit() else label
        result = RunResult.from_disk(path)
        search.append(
            {"cell": cell, "point": point, "seed": int(seed), "best_dev": best_dev(result)}
            | {"last_step": last_step(result), "train_seconds": result.stages[0].wall_time_s}
            | {"settings": growth.setting_of(point, design(args))}
        )
    return search


def details(args: argparse.Namespace) -> dict[str, Any]:
    """What the wide search's tables read: its design and seeds, every search run (``search``: the design points';
    ``growth``: the grown points'), every test run's row (``rows``: each cell's winner, the grown search's once all
    its test seeds have run and its level's growth is settled; ``first_rows``: the first winners these replaced;
    ``growing_rows``: grown winners tested at a level still growing, read into no family yet), the transfer scores
    (``transfer``: the noise floor's first, then each cell's winner's model as :func:`transfer_models` names it;
    ``first_transfer``: the models of the first winners the grown search replaced)."""
    from pcctune.results import EvalResult

    every, blocks = search_rows(args), progress(args)
    grown_search = [row for row in every if isinstance(row["point"], str)]
    points: dict[str, list[Any]] = {}
    for row in grown_search:
        points.setdefault(row["cell"], []).append((row["point"], row["settings"]))
    rows, grown = test_rows(args, folder(args), points), test_rows(args, folder(args) / GROWN, points)
    seeds_of = lambda cell: {row["seed"] for row in grown if row["cell"] == cell}  # noqa: E731
    tested = {row["cell"] for row in grown if seeds_of(row["cell"]) >= set(TEST_SEEDS)}
    settled = {block["block"] for block in blocks if block["settled"]}
    replaced = {cell.name for block in BLOCKS if block.name in settled for cell in block.cells(args.losses)} & tested
    first_rows = [row for row in rows if row["cell"] in replaced]
    growing_rows = [row for row in grown if row["cell"] in tested - replaced]
    rows = [row for row in rows if row["cell"] not in replaced] + [row for row in grown if row["cell"] in replaced]
    paths = sorted((folder(args) / "transfer").glob("*.json"), key=lambda p: (not p.stem.startswith("base"), p.stem))
    scores = {path.stem: dict(EvalResult.from_disk(path).transfer or {}) for path in paths}
    current = {name for name, *_ in transfer_models(args, list(BLOCKS))}
    transfer = {name: found for name, found in scores.items() if name in current}
    first_transfer = {name: found for name, found in scores.items() if name not in current}
    searched = {b.name: list(SEARCH_SEEDS[:1] if args.model else b.search_seeds) for b in BLOCKS if b.searched}
    seeds = {"search": searched, "test": list(TEST_SEEDS), "mpnet": list(MPNET_SEEDS)}
    search = [row for row in every if isinstance(row["point"], int)]
    found = {"design": list(design(args)), "seeds": seeds, "rows": rows, "first_rows": first_rows}
    found |= {"growing_rows": growing_rows, "search": search, "growth": grown_search}
    return found | {"transfer": transfer, "first_transfer": first_transfer, "progress": blocks}


def progress(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each block's runs with a record against its planned runs: the search (every loss × design point × search
    seed), the test seeds (every loss × test seed), the grown search as far as its records decide it (each grown
    point on the search seeds, each changed winner on the test seeds; ``settled``: :func:`growth_settled`) and,
    where the block has them, the transfer evaluations (the base model under each probe seed, each loss's best
    model)."""
    found = []
    for block in BLOCKS:
        cells = block.cells(args.losses)
        searches = [
            record_path(args, Run(cell, point, seed, False)).is_file()
            for cell in cells
            if block.searched
            for point in range(len(design(args)))
            for seed in search_seeds(args, cell)
        ]
        tests = [
            record_path(args, Run(cell, 0, seed, True)).is_file()
            for cell in cells
            for seed in scored_seeds(args, block)
        ]
        transfers = []
        if block.transfer:
            transfer = folder(args) / "transfer"
            transfers = [(transfer / f"base-probe{seed}.json").is_file() for seed in PROBE_SEEDS]
            names = [cell.name + winner_results(args, block, cell)[0] for cell in cells]
            transfers += [any(transfer.glob(f"{name}-seed*.json")) for name in names]
        grown = [record_path(args, run).is_file() for run in grown_runs(args, block, cells)]
        counts = {"search": searches, "test": tests, "growth": grown, "transfer": transfers}
        found.append(
            {"block": block.name, "settled": growth_settled(args, block)}
            | {part: [sum(done), len(done)] for part, done in counts.items()}
        )
    return found


def complete_blocks(blocks: list[dict[str, Any]]) -> set[str]:
    """The names of the blocks (of :func:`progress`) whose every planned run has a record: a level is read only
    then, never on the seeds that happen to have run."""
    return {
        block["block"] for block in blocks if all(done == planned for done, planned in (block["search"], block["test"]))
    }
