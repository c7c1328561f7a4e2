"""One stage = one sentence-transformers trainer run, selected on a dev set, resumable.

The trainer brings DDP (``accelerate launch`` / ``torchrun``), bf16, logging and checkpoint
resume; pcctune adds the loss, the global-batch plan, the dev evaluator (never a test set),
the final save and a plot of the curves.
"""

from __future__ import annotations

import errno
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.base.sampler import BatchSamplers
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments
from torch import nn
from transformers import ProgressCallback, TrainerCallback

from pcctune.distributed import barrier, is_main_process, launched_world_size
from pcctune.errors import PcctuneError
from pcctune.io import write_json
from pcctune.losses.base import loss_owned_parameters
from pcctune.losses.registry import loss_spec
from pcctune.losses.regression import RegressionLoss
from pcctune.modeling.gap_dropout import gap_dropout
from pcctune.modeling.onednn import kept_dequantized, onednn_linears
from pcctune.modeling.prompts import prompt_in_force
from pcctune.modeling.saving import is_saved_model, save_model
from pcctune.modeling.template import TemplateTransformer, check_budget, model_template, template_tokens
from pcctune.seeding import random_state_kept
from pcctune.training.batching import BatchPlan, plan_batches, planned_steps, steps_per_epoch
from pcctune.training.callbacks import LossParameterCheckpoints, StepToLoss, SyncLossParameters
from pcctune.training.checkpoints import (
    CHECKPOINTS,
    FINAL,
    best_at_last_evaluation,
    last_complete_checkpoint,
    reroot_best_checkpoint,
)
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.datasets import filtered_snli_pairs, train_dataset
from pcctune.training.dev import DevSTSEvaluator, dev_evaluator, dev_metric, holds_out
from pcctune.training.disk import check_disk, checkpoints_kept
from pcctune.training.head_warmup import warm_up_head
from pcctune.training.health import NonFiniteGuard
from pcctune.training.lengths import InputLengths, input_lengths, lengths_of
from pcctune.training.losses import build_loss
from pcctune.training.memory import PeakMemory
from pcctune.training.plots import plot_training
from pcctune.training.pooled import pooled_embeddings
from pcctune.training.sampling import SourceBatchSampler
from pcctune.training.stage_cost import StageClock, StageCost, cost_in
from pcctune.training.start import start_beaten, start_key, start_score, start_weights
from pcctune.training.timed_saves import SaveEvery
from pcctune.training.trainer import PcctuneTrainer


@contextmanager
def log_level_kept() -> Iterator[None]:
    """transformers' log level as the caller had it: a trainer sets it on every process but the first
    (``TrainingArguments.log_level_replica``)."""
    level = transformers.logging.get_verbosity()
    try:
        yield
    finally:
        transformers.logging.set_verbosity(level)


@contextmanager
def training_lengths(model: SentenceTransformer, stage: StageConfig) -> Iterator[InputLengths]:
    """The stage's ``max_seq_length`` and ``sentence_max_tokens`` cut training inputs (and the dev evaluations
    during training), yielding the model's own lengths: the saved models and the STS evaluations keep those."""
    own = lengths_of(model)
    cuts = stage.sentence_max_tokens is not None
    if cuts and not isinstance(model[0], TemplateTransformer) and model_template(model) is None:
        raise PcctuneError(
            f"stage {stage.name!r}: sentence_max_tokens needs pcctune's input module or a template (give the run a "
            "template); use max_seq_length for a plain model"
        )
    stage_lengths = InputLengths(
        stage.max_seq_length if stage.max_seq_length is not None else own.max_seq_length,
        stage.sentence_max_tokens if stage.sentence_max_tokens is not None else own.sentence_max_tokens,
    )
    with input_lengths(model, stage_lengths):
        yield own


LAST = "last"
"""The folder of a stage's last-step model, kept beside ``FINAL`` (the dev-best) when they differ."""
CURVES = "curves.png"
"""The plot of a stage's training curves (its loss and dev score against steps), in its stage folder."""


def continued_model(stage_dir: Path, init: str) -> Path:
    """The saved model of a finished stage that the next stage continues: the last step's (``final``) or the
    dev-best (``best``). ``last/`` exists only when dev selection loaded another checkpoint; else they agree."""
    last = stage_dir / LAST
    return last if init == "final" and is_saved_model(last) else stage_dir / FINAL


@contextmanager
def disk_errors(stage: StageConfig, stage_dir: Path) -> Iterator[None]:
    """A full disk (or quota) while the trainer writes a checkpoint is one clear error: the half-written
    checkpoint is skipped by ``--resume``, which continues from the last complete one."""
    try:
        yield
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise PcctuneError(
            f"stage {stage.name!r}: the disk is full ({error.strerror}) while writing under {stage_dir}; "
            "free space and run again with --resume (it continues from the last complete checkpoint)"
        ) from None


def check_template_budget(model: SentenceTransformer, stage: StageConfig) -> None:
    """Before the trainer starts (its progress bars would hide the message): the stage's ``max_seq_length``
    must leave room for the sentence after the template."""
    module = model[0]
    if isinstance(module, Transformer):
        try:
            check_budget(template_tokens(module), stage.max_seq_length or model.max_seq_length)
        except PcctuneError as error:
            raise PcctuneError(f"stage {stage.name!r}: {error}; raise its max_seq_length") from None


@dataclass
class StageResult:
    """What a trained stage hands back to its run: what it cost, its data's size, its final model, the dev checkpoint
    it chose and its score, the trainer's log and the plot of its curves."""

    cost: StageCost
    memory_kind: str
    name: str
    examples: int
    final_dir: Path
    best_checkpoint: str | None
    best_dev: float | None
    log_history: list[dict[str, Any]]
    plot: Path
    start_dev: float | None = None
    """The starting model's dev score, before the first step (``pcctune.training.start``); rank 0 only."""
    best_at_last_evaluation: bool | None = None
    """Whether the dev-best checkpoint is the last dev evaluation (``pcctune.training.checkpoints``)."""


def in_batch_negatives(stage: StageConfig) -> bool:
    """True when the stage's loss contrasts each pair with the batch's others: its batches need distinct sentences."""
    return loss_spec(stage.loss).data in ("triplets", "positives")


def training_arguments(
    stage: StageConfig, run: RunConfig, stage_dir: Path, plan: BatchPlan, prompt: str | None = None
) -> SentenceTransformerTrainingArguments:
    """The trainer's arguments for ``stage``: no accumulation (see ``batching``), dev selection when set, and the
    ``prompt`` the model's evaluations encode under (``pcctune.modeling.prompts``) before every training sentence:
    the trainer applies only its ``prompts`` argument, never the model's default prompt."""
    metric = dev_metric(stage.dev)
    sampler: Any = BatchSamplers.NO_DUPLICATES if in_batch_negatives(stage) else BatchSamplers.BATCH_SAMPLER
    if stage.group_by_source:
        sampler = SourceBatchSampler
    return SentenceTransformerTrainingArguments(
        output_dir=str(stage_dir / CHECKPOINTS),
        num_train_epochs=stage.epochs,
        max_steps=stage.max_steps,
        per_device_train_batch_size=plan.per_device_batch_size,
        gradient_accumulation_steps=plan.gradient_accumulation_steps,
        learning_rate=stage.learning_rate,
        warmup_steps=stage.warmup_ratio,  # a float below 1 is a ratio in transformers 5
        weight_decay=stage.weight_decay,
        seed=run.seed,
        data_seed=run.seed,
        bf16=stage.bf16,
        use_cpu=not torch.cuda.is_available(),  # required by transformers for bf16 autocast on CPU
        eval_strategy="steps" if metric else "no",
        eval_steps=stage.eval_steps,
        save_strategy="steps",
        save_steps=stage.eval_steps,
        save_total_limit=stage.save_total_limit,
        load_best_model_at_end=metric is not None,
        metric_for_best_model=metric,
        greater_is_better=True,
        logging_steps=stage.logging_steps,
        dataloader_drop_last=True,
        dataloader_pin_memory=torch.cuda.is_available(),
        report_to=run.report_to,
        # transformers hides the progress bar whenever its log level is above warning (TRANSFORMERS_VERBOSITY=error,
        # which quiets its warnings): a stage of hours then shows nothing at all.
        disable_tqdm=False,
        # In-batch negatives must not repeat a sentence; Pearson groups are plain random batches.
        batch_sampler=sampler,
        activation_checkpointing=stage.gradient_checkpointing,
        prompts=prompt or None,
    )


def stage_loss(
    stage: StageConfig,
    model: SentenceTransformer,
    plan: BatchPlan,
    top: float | None,
    senteval_dir: Path,
    seed: int,
) -> nn.Module:
    """The stage's loss (``top``: its data's largest score, ``top_score``); a regression head is first fitted
    on NLI when ``head_warmup: nli`` (SNLI's dev and test pairs through the stage's leakage filter)."""
    loss = build_loss(stage, model, plan.mini_batch_size, top)
    if stage.regression.head_warmup == "nli" and isinstance(loss, RegressionLoss):
        warm_up_head(loss, filtered_snli_pairs(stage, senteval_dir), seed=seed)
    return loss


@contextmanager
def cpu_training_kernels(model: SentenceTransformer, run: RunConfig) -> Iterator[None]:
    """The run's CPU kernels for the time of a training stage: linear layers through oneDNN (``onednn``), the
    frozen 4-bit weights dequantized once (``dequantized_cache_mb``) and dropout drawn by gaps (``dropout_sampler``)."""
    with (
        onednn_linears(model, active=run.onednn != "off", only_4bit=run.onednn == "auto"),
        kept_dequantized(run.dequantized_cache_mb),
        gap_dropout(model, active=run.dropout_sampler == "gaps"),
    ):
        yield


def stage_callbacks(loss: nn.Module, model: SentenceTransformer, stage: StageConfig) -> list[TrainerCallback]:
    """The health guard over every trainable weight (``on_nonfinite``), and what keeps a loss's own state right:
    its parameters synchronised across processes, its step resumed; and the clock's resume points (``timed_saves``)."""
    trainable = [p for p in [*model.parameters(), *loss_owned_parameters(loss, model)] if p.requires_grad]
    found: list[TrainerCallback] = [NonFiniteGuard(trainable, stage.name, stage.on_nonfinite)]
    if owned := loss_owned_parameters(loss, model):
        found += [LossParameterCheckpoints(owned), SyncLossParameters(owned)]
    if hasattr(loss, "step"):
        found.append(StepToLoss(loss))
    if stage.save_every_minutes is not None:
        found.append(SaveEvery(stage.save_every_minutes))
    return found


def finite_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trainer's log with a non-finite number (a skipped step's gradient norm) as ``null``: JSON has no NaN."""
    return [
        {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()} for row in history
    ]


def save_stage(
    model: SentenceTransformer, history: list[dict[str, Any]], stage: StageConfig, run: RunConfig, stage_dir: Path
) -> Path:
    """Rank 0 writes the final model (atomically: a complete folder or none), the log and the curves."""
    final_dir = stage_dir / FINAL
    if is_main_process():
        save_model(model, final_dir)
        write_json(finite_history(history), stage_dir / "log_history.json")
        plot_training(
            history, dev_metric(stage.dev), f"{run.model}: stage {stage.name} ({stage.loss})", stage_dir / CURVES
        )
    barrier()  # the next stage loads final_dir on every process
    return final_dir


def check_stage_disk(
    model: SentenceTransformer,
    stage: StageConfig,
    dataset: Dataset,
    args: SentenceTransformerTrainingArguments,
    stage_dir: Path,
    keep_last: bool,
) -> None:
    """Stop before training when the stage's checkpoints and saved models would not fit the free disk (or, a
    ``group_by_source`` stage, when its sources give no full batch: ``steps_per_epoch``)."""
    steps = planned_steps(stage, steps_per_epoch(stage, dataset, launched_world_size(), args.seed))
    selects = args.metric_for_best_model is not None
    kept = checkpoints_kept(steps, stage.eval_steps, stage.save_total_limit, selects)
    kept += stage.save_every_minutes is not None  # the one resume point written by the clock
    check_disk(model, stage_dir, kept, extra_models=2 if keep_last else 1)


def trained_history(trainer: PcctuneTrainer, stage: StageConfig, examples: int) -> list[dict[str, Any]]:
    """The trainer's log history; a stage that trained no step (its data gave no full batch) stops here."""
    if trainer.state.global_step > 0:
        return trainer.state.log_history
    why = (
        " of distinct sentences (in-batch negatives drop a batch that repeats one)" if in_batch_negatives(stage) else ""
    )
    raise PcctuneError(
        f"stage {stage.name!r} trained no step: {examples} examples gave no full batch of {stage.batch_size}{why}"
    )


def stage_trainer(
    model: SentenceTransformer,
    stage: StageConfig,
    args: SentenceTransformerTrainingArguments,
    dataset: Dataset,
    loss: nn.Module,
    callbacks: list[Any],
    senteval_dir: Path,
    quiet: bool = False,
) -> PcctuneTrainer:
    """The stage's sentence-transformers trainer: its loss, the stage's own callbacks before ``callbacks``, and the
    dev evaluator that selects checkpoints; ``quiet``: without the progress bar that also prints the log lines."""
    trainer = PcctuneTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        callbacks=[*stage_callbacks(loss, model, stage), *callbacks],
        loss=loss,
        evaluator=dev_evaluator(stage, senteval_dir),
    )
    if quiet:
        trainer.remove_callback(ProgressCallback)
    return trainer


def top_score(dataset: Dataset) -> float | None:
    """The largest score of a scored training set (a classifier's classes are it + 1, ``pearson_mse`` divides the
    gold by it); ``None`` for a set without scores."""
    scores = dataset["score"] if "score" in dataset.column_names else []
    return float(max(scores)) if scores and isinstance(scores[0], int | float) else None


def train_from_start(
    trainer: PcctuneTrainer, model: SentenceTransformer, stage: StageConfig, run: RunConfig, checkpoint: str | None
) -> float | None:
    """Score the starting model on the dev set (rank 0, ``pcctune.training.start``), train from ``checkpoint``, and
    with ``keep_start_if_best`` put the starting weights back where no checkpoint beat them; the start's score."""
    if checkpoint is not None:  # a run folder moved since keeps its best dev checkpoint
        if is_main_process():
            reroot_best_checkpoint(Path(checkpoint))
        barrier()
    evaluator = trainer.evaluator
    start = None
    if isinstance(evaluator, DevSTSEvaluator) and is_main_process():
        start = start_score(model, evaluator, start_key(model, stage, run, evaluator))
    kept = start_weights(model) if stage.keep_start_if_best else {}
    trainer.train(resume_from_checkpoint=checkpoint)
    if kept and start_beaten(start, trainer.state.best_metric) is False:
        model.load_state_dict(kept, strict=False)
    return start


@random_state_kept()
@log_level_kept()
def run_stage(
    model: SentenceTransformer,
    stage: StageConfig,
    run: RunConfig,
    stage_dir: Path,
    senteval_dir: Path,
    resume: bool = False,
    callbacks: list[Any] | None = None,
    checkpoint: str | None = None,
    keep_last: bool = False,
    quiet: bool = False,
) -> StageResult:
    """Train ``model`` in place for one stage (its start scored on dev first), then load its best dev checkpoint, or
    its start with ``keep_start_if_best`` where none beat it; ``resume``/``checkpoint`` continue from the last/a given
    checkpoint; ``keep_last`` saves the last step in ``stage_dir/last`` (for a next stage's ``init: final``);
    ``quiet``: the trainer shows no progress bar and prints no log lines."""
    check_template_budget(model, stage)
    checkpoint = checkpoint or (last_complete_checkpoint(stage_dir / CHECKPOINTS) if resume else None)
    clock = StageClock(cost_in(checkpoint), memory := PeakMemory())
    dataset = train_dataset(stage, senteval_dir, stage_dir, run.seed, holds_out(stage, senteval_dir))
    plan = plan_batches(
        stage.batch_size, launched_world_size(), stage.gradient_accumulation_steps, stage.mini_batch_size
    )
    args = training_arguments(stage, run, stage_dir, plan, prompt_in_force(model))
    check_stage_disk(model, stage, dataset, args, stage_dir, keep_last)
    with pooled_embeddings(model, active=issubclass(loss_spec(stage.loss).cls, RegressionLoss)):
        loss = stage_loss(stage, model, plan, top_score(dataset), senteval_dir, run.seed)
        trainer = stage_trainer(model, stage, args, dataset, loss, [clock, *(callbacks or [])], senteval_dir, quiet)
        trainer.last_dir = stage_dir / LAST if keep_last else None
        with (
            training_lengths(model, stage) as own_lengths,
            memory,
            disk_errors(stage, stage_dir),
            cpu_training_kernels(model, run),
        ):
            trainer.own_lengths = own_lengths
            start = train_from_start(trainer, model, stage, run, checkpoint)
    history = trained_history(trainer, stage, len(dataset))
    final_dir = save_stage(model, history, stage, run, stage_dir)
    return stage_result(trainer, stage, (clock.total(), memory.method), len(dataset), history, final_dir, start)


def stage_result(
    trainer: PcctuneTrainer,
    stage: StageConfig,
    cost: tuple[StageCost, str],
    examples: int,
    history: list[dict[str, Any]],
    final_dir: Path,
    start: float | None,
) -> StageResult:
    """What the trained stage hands back: its ``cost`` (time and memory kind), its ``examples``, its saved
    ``final_dir``, its starting dev score ``start`` and, from ``trainer``'s state and ``history``, the dev checkpoint
    it chose."""
    best = trainer.state.best_model_checkpoint
    curves = final_dir.parent / CURVES
    at_last = best_at_last_evaluation(history, dev_metric(stage.dev), best)
    return StageResult(
        *cost, stage.name, examples, final_dir, best, trainer.state.best_metric, history, curves, start, at_last
    )
