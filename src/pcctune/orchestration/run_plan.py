"""``pcctune train CONFIG --check``: a run checked and planned without training it, loading its weights or writing a
file. It makes every check a run makes before its first step (the run folder, ``run_checks.validate_run``, each
source's leakage audit) and says what each stage will train: its examples, its optimizer steps as the trainer counts
them and its dev evaluations, so a mistake in a run of hours shows in seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from datasets import Dataset
from rich.console import Console

from pcctune.console import plain_console
from pcctune.data.cache import senteval_folder
from pcctune.distributed import launched_world_size
from pcctune.evaluation.tables import Cell, ScoreTable
from pcctune.losses.registry import loss_spec
from pcctune.orchestration.run_checks import compared_stages, validate_run
from pcctune.orchestration.run_folder import check_run_folder
from pcctune.training.audit import audit_line, stage_audit
from pcctune.training.batching import plan_batches
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.datasets import train_dataset
from pcctune.training.dev import holds_out, stage_dev_parts
from pcctune.training.sampling import SourceBatchSampler


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


def batches_per_epoch(stage: StageConfig, dataset: Dataset, world_size: int, seed: int) -> int:
    """Optimizer steps in one pass over ``dataset``, as the trainer counts them: full batches only
    (``dataloader_drop_last``): sentence-transformers' samplers ``len(dataset) // batch``, a ``group_by_source``
    stage's sampler the full batches of each source; each process takes its share of them."""
    per_device = plan_batches(stage.batch_size, world_size).per_device_batch_size
    if stage.group_by_source:
        batches = len(SourceBatchSampler(dataset, per_device, drop_last=True, seed=seed))
    else:
        batches = len(dataset) // per_device
    return math.ceil(batches / world_size)


def stage_plan(stage: StageConfig, label: str, run: RunConfig, senteval: Path, world_size: int) -> StagePlan:
    """``stage``'s plan under ``label``: its training set read and filtered as its training reads it (less a held-out
    dev share), its steps and its dev evaluations."""
    dev_pairs = sum(len(pairs) for pairs in stage_dev_parts(stage, senteval).values())
    if loss_spec(stage.loss).data == "preferences":
        return StagePlan(label, stage.loss, None, stage.batch_size, None, dev_pairs, None)
    dataset = train_dataset(stage, senteval, seed=run.seed, holdout=holds_out(stage, senteval))
    per_epoch = batches_per_epoch(stage, dataset, world_size, run.seed)
    steps = stage.max_steps if stage.max_steps > 0 else math.ceil(stage.epochs * per_epoch)
    evaluations = 1 + math.ceil(steps / stage.eval_steps) if stage.dev != "none" else 0
    return StagePlan(label, stage.loss, len(dataset), stage.batch_size, steps, dev_pairs, evaluations)


def check_run(
    config: RunConfig, compare: list[str] | None = None, resume: bool = False, overwrite: bool = False
) -> list[StagePlan]:
    """Every check ``run_pipeline`` makes before it trains, then each stage's plan (the last stage once per
    ``compare`` loss, named as its folder is: ``NAME-LOSS``); nothing is trained or written, and no weights load."""
    check_run_folder(config, resume, overwrite)
    senteval = senteval_folder(config.data_dir)
    validate_run(config, senteval, compare)
    labelled = [(stage, stage.name) for stage in config.stages]
    if compare:
        last = labelled.pop()[0]
        labelled += [(variant, f"{last.name}-{variant.loss}") for variant in compared_stages(last, compare)]
    return [stage_plan(stage, label, config, senteval, launched_world_size()) for stage, label in labelled]


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


def run_check(
    config: RunConfig,
    compare: list[str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    console: Console | None = None,
) -> list[StagePlan]:
    """``pcctune train CONFIG --check``: ``check_run``, with each source's leakage audit line and the plan's table
    printed."""
    console = console or plain_console()
    plans = check_run(config, compare, resume, overwrite)
    senteval = senteval_folder(config.data_dir)
    for stage in config.stages:
        for entry in stage_audit(stage, senteval):
            console.print(audit_line(entry), highlight=False, markup=False, soft_wrap=True)
    console.print(plan_table(plans).to_rich())
    console.print(f"checked: nothing was trained or written, and {config.model}'s weights were not loaded")
    return plans
