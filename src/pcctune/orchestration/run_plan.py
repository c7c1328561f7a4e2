"""``pcctune train CONFIG --check``: a run checked and planned without training it or loading its weights. It makes
the checks ``run_pipeline`` makes before its first step, in its order (the checkpoint and run folder, the test tasks
and data files, a resumed run's data, ``run_checks.validate_run``, each source's leakage audit) and says what each
stage will train: its examples, its optimizer steps as the trainer counts them and its dev evaluations, so a mistake
in a run of hours shows in seconds. Nothing is written to the run folder or pcctune's cache; like a run, it may fetch
the SentEval data or a Hub model's settings files where they are missing."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from pcctune.console import plain_console
from pcctune.data.audit import waiting_checks
from pcctune.data.cache import senteval_folder
from pcctune.distributed import is_main_process, launched_world_size
from pcctune.evaluation.tables import Cell, ScoreTable
from pcctune.losses.registry import loss_spec
from pcctune.orchestration.pipeline import Pipeline, check_start, finished
from pcctune.orchestration.run_checks import validate_run
from pcctune.training.batching import planned_steps, steps_per_epoch
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.datasets import train_dataset
from pcctune.training.dev import holds_out, stage_dev_parts


@dataclass(frozen=True)
class StagePlan:
    """What one stage will train: its examples (``None`` for DPO, whose preferences are ranked by a cross-encoder
    trained in its stage), optimizer steps, dev pairs and dev evaluations (the start's score, one every
    ``eval_steps`` and one at the last step, as transformers' trainer makes them)."""

    name: str
    loss: str
    examples: int | None
    batch_size: int
    steps: int | None
    dev_pairs: int
    dev_evaluations: int | None


def stage_plan(stage: StageConfig, label: str, run: RunConfig, senteval: Path, world_size: int) -> StagePlan:
    """``stage``'s plan under ``label``: its training set read and filtered as its training reads it (less a held-out
    dev share), its steps and its dev evaluations."""
    dev_pairs = sum(len(pairs) for pairs in stage_dev_parts(stage, senteval).values())
    if loss_spec(stage.loss).data == "preferences":
        return StagePlan(label, stage.loss, None, stage.batch_size, None, dev_pairs, None)
    dataset = train_dataset(stage, senteval, seed=run.seed, holdout=holds_out(stage, senteval))
    steps = planned_steps(stage, steps_per_epoch(stage, dataset, world_size, run.seed))
    evaluations = 1 + math.ceil(steps / stage.eval_steps) if stage.dev != "none" else 0
    return StagePlan(label, stage.loss, len(dataset), stage.batch_size, steps, dev_pairs, evaluations)


def check_run(
    config: RunConfig,
    compare: list[str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    resume_from: str | None = None,
    console: Console | None = None,
) -> list[StagePlan]:
    """``pcctune train CONFIG --check``: every check ``run_pipeline`` makes before it trains, in its order, each
    source's leakage audit line printed, then the plan of each stage it checked (``run_checks.planned_stages``) for
    the processes launched and its table (rank 0); no plan for a finished run resumed. Leakage checks made here are
    not kept in the cache."""
    console = console or plain_console()
    resume = resume or resume_from is not None
    check_start(config, resume, overwrite, resume_from)
    if finished(config, resume, resume_from):
        console.print(f"{config.output_dir} is finished: --resume trains nothing", highlight=False, markup=False)
        return []
    senteval = senteval_folder(config.data_dir)
    with waiting_checks():  # never kept: a check leaves the cache as it found it
        pipeline = Pipeline(config, senteval, console, resume, compare, resume_from=resume_from)  # test tasks, data
        stages = validate_run(config, senteval, compare)
        pipeline.audit()
        world = launched_world_size()
        plans = [stage_plan(stage, label, config, senteval, world) for stage, label in stages]
    if is_main_process():
        console.print(plan_table(plans).to_rich())
        console.print(planned_for(config, world, resume), highlight=False, markup=False)
    return plans


def plan_table(plans: list[StagePlan]) -> ScoreTable:
    """One row per stage: loss, examples, batch, steps, dev pairs and dev evaluations."""
    rows: dict[str, dict[str, Cell]] = {}
    for plan in plans:
        rows[plan.name] = {
            "loss": plan.loss,
            "training examples": "ranked in its stage" if plan.examples is None else f"{plan.examples:,}",
            "batch": str(plan.batch_size),
            "steps": "—" if plan.steps is None else f"{plan.steps:,}",
            "dev pairs": f"{plan.dev_pairs:,}" if plan.dev_pairs else "no dev set",
            "dev evaluations": "—" if plan.dev_evaluations is None else str(plan.dev_evaluations),
        }
    return ScoreTable.from_rows(rows, title="what each stage will train", first_column="stage")


def planned_for(config: RunConfig, world_size: int, resume: bool) -> str:
    """The check's last line: what it planned for, and what it did not do."""
    processes = "1 process" if world_size == 1 else f"{world_size} processes"
    resumed = "; a resumed run trains only what its checkpoints lack" if resume else ""
    done = f"nothing was trained or written, and {config.model}'s weights were not loaded"
    return f"checked for {processes}{resumed}: {done}"
