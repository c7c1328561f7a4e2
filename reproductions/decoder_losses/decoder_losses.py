"""On a decoder after a contrastive stage 1, does the Pearson stage beat the losses a user would use instead?

Pcc-tuning claims its edge on decoder LLMs (Table 3): a contrastive stage I, then the Pearson loss (eq. 8). Here
SmolLM2-135M's stage 1 of the recipe (``configs/paper_recipe_smollm2_cpu.yaml``, seed 1) is built once and its
model kept beside the records (``kept_stage1``: a machine without it in its run folders lays the kept one there),
then continued at leakage level ``pair`` with each of three stage-2 losses: Pearson, cosine-MSE
(sentence-transformers' ``CosineSimilarityLoss``) and CoSENT. Every loss gets the same search: the recipe's stage 2
at four learning rates (the recipe's, half, double and four times), then its schedule grown where it binds
(``search``), at one search seed that is never a test seed, checkpoints and the winner chosen on the dev sets
filtered at ``pair``, no test set read. Each winner then runs over test seeds 1-3, scored on the seven full test sets
under the papers' protocol. The contrastive stage-2 rows of ``decoder_full`` (seeds 1-3, the recipe's settings, from
its own stage-1 build) stand beside them. Differences are paired by seed
(:func:`pcctune.evaluation.compare.seed_difference`, 95 % interval): a tie where the interval holds 0.

    python -m reproductions decoder_losses --rerun                 # every missing run, one at a time; resumable
    python -m reproductions decoder_losses --rerun -- --jobs 2     # stage 1 alone on every core, then the stage-2
                                                                   # runs two at a time (a 2-core CPU)
    python -m reproductions decoder_losses --rerun -- --jobs 4     # up to four at once (a machine with a GPU)
    python -m reproductions decoder_losses --summarize             # table.md and decoder_losses.png from runs.json

Stage 1 selects no dev checkpoint: its model is its last step, the one the recipe's stage 2 continues
(``init: final``) and the one the stage-1 row scores. Each finished run leaves its record in ``records/`` (search
runs in ``records/search/``) and is never trained again; a run folder left by a killed run is resumed; ``runs.json``
is rewritten from the records after every run, so ``--summarize`` draws what is done. A stage 1 built again (the
kept one moved away) is scored and kept as ``records/stage1_rebuilt.json``; the runner stops where its average is more
than 0.05 from the first build's (``reproductions/gpu``: the recipe lands within that on a GPU and on the CPU).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reproductions._common import Measured, claim, kept, run_jobs, save_rows, train_once
from reproductions.decoder_losses import design, kept_stage1
from reproductions.decoder_losses.tables import (
    SETTINGS,
    collect,
    details_of,
    plot,
    update_front_page,
)
from reproductions.decoder_losses.tables import (
    table as table,  # the benchmark's table: Benchmark.of reads it from this module
)

from pcctune.training.config import RunConfig


def missing_runs(args: argparse.Namespace) -> Iterator[tuple[str, RunConfig, Path, bool]]:
    """(name, config, record, scored on the test sets) of each run the records call for and do not hold yet: every
    search run (the schedule's growth once the runs before it have their records, ``search``), then the test seeds
    one seed at a time, each seed's losses one after another (their differences are paired by seed, so a seed's runs
    follow each other on one machine), once the whole search has run."""
    for loss, points in design.search_plan(args).items():
        for point in points:
            record = design.search_record(args, loss, point)
            if not record.is_file():
                yield (
                    record.stem,
                    design.stage2_config(args, loss, point, design.SEARCH_SEED, record.stem),
                    record,
                    False,
                )
    chosen = {loss: design.winner(args, loss) for loss in design.losses(args)}
    for seed in design.seeds_of(args):
        for loss, point in chosen.items():
            record = design.test_record(args, loss, seed)
            if point is not None and not record.is_file():
                yield record.stem, design.stage2_config(args, loss, point, seed, record.stem), record, True


def ready_jobs(args: argparse.Namespace) -> Iterator[tuple[Any, ...]]:
    """(name, function, its arguments) of each job the records allow now: stage 1 while it has no record, or while
    runs remain and this machine lacks its model and no build is kept (``kept_stage1.bring``); else the missing
    stage-2 runs."""
    missing = list(missing_runs(args))
    if missing:
        kept_stage1.bring(args)
    if not (design.records(args) / "stage1.json").is_file() or (missing and not design.stage1_built(args)):
        yield "stage1", build_stage1, args, design.stage1_config(args)
        return
    design.check_stage1_build(args)
    build = design.stage1_digest(args) if missing else ""
    for name, config, record, score in missing:
        design.check_one_build(args, record, build)
        yield name, train_stage2, args, config, record, score, build


def train_stage2(args: argparse.Namespace, config: RunConfig, record: Path, score: bool, build: str) -> None:
    """A stage-2 run whose record names the stage-1 build it continued, kept only where no record it is read with
    continued another: checked when the run is handed out and again as its record is kept (another runner on the
    same records may have kept one meanwhile)."""
    keep_check = functools.partial(design.check_one_build, args, record, build)
    train_once(config, record, score, {design.BUILD_KEY: build}, keep_check)


def build_stage1(args: argparse.Namespace, config: RunConfig) -> None:
    """Build (or resume) stage 1 and score it: the first build's record is ``stage1.json``, its model kept beside the
    records (``kept_stage1``: a machine without stage 1 continues that model instead of a rebuild); a later build's is
    ``stage1_rebuilt.json``, and one whose test average is not within ``design.REBUILD_TOLERANCE`` of the first
    stops the runner before any stage-2 run (``design.check_stage1_build``, at every start). A rebuild that passes is
    another model that scores alike (stage-2 records name their machine); the check chooses nothing."""
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.orchestration.run_folder import holds_a_run

    result = run_pipeline(config, resume=holds_a_run(Path(config.output_dir)))
    records = design.records(args)
    if kept(records / "stage1.json") is None:
        kept_stage1.keep(args)
        result.to_disk(records / "stage1.json")
        return
    result.to_disk(records / "stage1_rebuilt.json")


def save_progress(args: argparse.Namespace) -> None:
    """``runs.json`` from the records as they are now (after every run: what a killed command has done is kept),
    and the front page's words on this claim (:func:`update_front_page`)."""
    save_rows(Path(args.output), BENCHMARK.name, collect(args), BENCHMARK.label_key, SETTINGS, details_of(args))
    update_front_page(args)


def measure(args: argparse.Namespace) -> Measured:
    if args.quick:
        args.runs = Path(args.output) / "runs"
    max_runs, after = args.max_runs, lambda: save_progress(args)
    if args.jobs > 1 and max_runs != 0 and next(iter(ready_jobs(args)), ("",))[0] == "stage1":
        run_jobs(lambda: ready_jobs(args), 1, 1, after)  # stage 1 alone, in this process on every core
        max_runs = None if max_runs is None else max_runs - 1
    run_jobs(lambda: ready_jobs(args), args.jobs, max_runs, after)
    update_front_page(args)
    return Measured(collect(args), SETTINGS, details_of(args))


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs at once, each in its own process with its share of the cores"
    )
    parser.add_argument("--max-runs", type=int, default=None, help="stop after this many runs (0: only runs.json)")
    parser.add_argument("--runs", type=Path, default=Path("runs/decoder_losses"), help="run folders (out of git)")
    parser.add_argument("--recipe", type=Path, default=Path("configs/paper_recipe_smollm2_cpu.yaml"))
    parser.add_argument("--model", default=None, help="replace the recipe's model (--quick: a tiny decoder)")


QUICK = {"model": "{llama}"}
"""--quick: stage 1, then Pearson and cosine-MSE each searched over two rates and run over two seeds, on a tiny
random decoder; then the table."""
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
