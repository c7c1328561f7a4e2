"""One stage = one sentence-transformers trainer run, selected on a dev set, resumable.

The trainer brings DDP (``accelerate launch`` / ``torchrun``), bf16, logging and checkpoint
resume; pcctune adds the loss, the global-batch plan, the dev evaluator (never a test set),
the final save and a plot of the curves.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.base.sampler import BatchSamplers
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments
from transformers.trainer_utils import get_last_checkpoint

from pcctune.data.nli import read_snli_regression_pairs
from pcctune.distributed import barrier, is_main_process
from pcctune.losses.factory import build_loss
from pcctune.losses.mlm import AuxiliaryMLMLoss, load_mlm_head
from pcctune.losses.regression import RegressionLoss
from pcctune.training.batching import plan_batches
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.data import dev_evaluator, train_dataset
from pcctune.training.head_warmup import warm_up_head
from pcctune.training.plots import plot_training


@dataclass
class StageResult:
    name: str
    examples: int
    final_dir: Path
    best_checkpoint: str | None
    best_dev: float | None
    log_history: list[dict]
    plot: Path


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def run_stage(
    model: SentenceTransformer,
    stage: StageConfig,
    run: RunConfig,
    stage_dir: Path,
    senteval_dir: Path,
    resume: bool = False,
    callbacks: list | None = None,
    checkpoint: str | None = None,
) -> StageResult:
    """Train ``model`` in place for one stage; the best dev checkpoint is loaded at the end.

    ``resume`` continues from the stage's last checkpoint; ``checkpoint`` from a given one.
    """
    dataset = train_dataset(stage, senteval_dir, stage_dir, run.seed)
    evaluator = dev_evaluator(stage.dev, senteval_dir)
    plan = plan_batches(stage.batch_size, _world_size(), stage.gradient_accumulation_steps, stage.mini_batch_size)
    # The stage's max_seq_length cuts training inputs (and the dev evaluations during training);
    # the saved model and the STS evaluation after the stage keep the model's own.
    own_length = model.max_seq_length
    if stage.max_seq_length is not None:
        model.max_seq_length = stage.max_seq_length
    num_classes = max(dataset["score"]) + 1 if stage.loss == "ce" else None
    loss = build_loss(stage, model, plan.mini_batch_size, num_classes)
    if stage.mlm.enabled:
        mlm = stage.mlm
        backbone = model[0].model
        source = (backbone.get_base_model() if hasattr(backbone, "get_base_model") else backbone).config._name_or_path
        loss = AuxiliaryMLMLoss(loss, model, load_mlm_head(source, mlm.train_head), mlm.initial_weight,
                                mlm.decay_rate, mlm.decay_steps, mlm.mask_probability)
    if stage.regression.head_warmup == "nli" and isinstance(loss, RegressionLoss):
        warm_up_head(loss, read_snli_regression_pairs(senteval_dir / "downstream" / "SNLI"), seed=run.seed)
    metric = f"eval_{stage.dev}_spearman_cosine" if evaluator is not None else None
    args = SentenceTransformerTrainingArguments(
        output_dir=str(stage_dir / "checkpoints"),
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
        eval_strategy="steps" if evaluator is not None else "no",
        eval_steps=stage.eval_steps,
        save_strategy="steps",
        save_steps=stage.eval_steps,
        load_best_model_at_end=evaluator is not None,
        metric_for_best_model=metric,
        greater_is_better=True,
        logging_steps=stage.logging_steps,
        dataloader_drop_last=True,
        dataloader_pin_memory=torch.cuda.is_available(),
        report_to="none",
        # In-batch negatives must not repeat a sentence; Pearson groups are plain random batches.
        batch_sampler=BatchSamplers.NO_DUPLICATES if stage.loss in ("infonce", "contrastive") else BatchSamplers.BATCH_SAMPLER,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=dataset, loss=loss, evaluator=evaluator, callbacks=callbacks,
    )
    if checkpoint is None and resume and Path(args.output_dir).is_dir():
        checkpoint = get_last_checkpoint(args.output_dir)
    try:
        trainer.train(resume_from_checkpoint=checkpoint)
    finally:
        model.max_seq_length = own_length
    final_dir = stage_dir / "final"
    history = trainer.state.log_history
    plot = stage_dir / "curves.png"
    if is_main_process():
        model.save(str(final_dir))
        (stage_dir / "log_history.json").write_text(json.dumps(history, indent=1))
        plot_training(history, metric, f"{run.model}: stage {stage.name} ({stage.loss})", plot)
    barrier()  # the next stage loads final_dir on every process
    return StageResult(stage.name, len(dataset), final_dir, trainer.state.best_model_checkpoint,
                       trainer.state.best_metric, history, plot)
