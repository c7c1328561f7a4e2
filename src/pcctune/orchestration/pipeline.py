"""The Pcc-tuning pipeline: stage 1 (contrastive) then stage 2 (Pearson), evaluated after each.

``compare`` reruns the last stage once per loss (e.g. ``pearson`` and ``infonce_positives``, the
§4.3 ablation) from the same starting point, and prints them side by side. ``resume`` skips
finished stages (their ``final/`` folder exists) and continues an interrupted stage from its
last complete checkpoint, adapter included. What a run has recorded so far (each finished stage's record, each
test evaluation) is kept in ``results.partial.json`` as it lands, so a resumed run neither scores a finished
stage again nor loses its wall time and peak memory. The run folder's rules are in ``.run_folder``.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from sentence_transformers import SentenceTransformer
from transformers import set_seed

from pcctune.console import plain_console
from pcctune.data.audit import waiting_checks
from pcctune.data.cache import senteval_folder
from pcctune.data.sts import STSTask
from pcctune.distributed import barrier, is_distributed, is_main_process
from pcctune.errors import PcctuneError
from pcctune.evaluation.sts import evaluate_sts, score_section
from pcctune.evaluation.tables import ScoreTable
from pcctune.host_settings import record_settings
from pcctune.modeling.adapters import attach_adapter, quantization_settings, trainable_fraction
from pcctune.modeling.build import build_model
from pcctune.modeling.fingerprint import settings_key
from pcctune.modeling.pooler_head import add_mlp_head
from pcctune.modeling.prompts import prompt_in_force, use_prompt
from pcctune.modeling.saving import is_saved_model
from pcctune.modeling.vector_store import SUFFIX as STORE_SUFFIX
from pcctune.modeling.vector_store import VectorStore
from pcctune.orchestration.base_scores import COMPUTED_BY, before_key, scores_kept, tasks_digest
from pcctune.orchestration.model_card import name_base_model, write_card
from pcctune.orchestration.run_checks import check_same_data, validate_run
from pcctune.orchestration.run_folder import (
    PARTIAL_RESULTS,
    RESULTS,
    check_run_folder,
    discard_if_nothing_to_resume,
    is_empty,
    mark_nonfinite_stop,
    run_lock,
    start_run_folder,
)
from pcctune.orchestration.run_tasks import run_test_tasks
from pcctune.provenance import file_hashes, library_versions
from pcctune.results import RunResult, StageRecord
from pcctune.seeding import random_state_kept
from pcctune.training.audit import audit_line, stage_audit
from pcctune.training.checkpoints import CHECKPOINTS, FINAL, TRAINER_STATE, drop_checkpoints_after
from pcctune.training.config import RunConfig, StageConfig, config_fingerprint
from pcctune.training.datasets import stage2_set
from pcctune.training.dev import leakage_filter, stage_data_files, stage_dev_parts
from pcctune.training.health import NonFiniteTraining, skipped_steps
from pcctune.training.stage import StageResult, continued_model, run_stage
from pcctune.training.start import start_beaten


def load_base(config: RunConfig, quantized: bool = True, head: bool = True) -> SentenceTransformer:
    """The run's base model in its dtype (with its MLP pooler head, if any, unless ``head`` is false); 4-bit for a
    QLoRA run unless ``quantized`` is false. A saved model (e.g. another run's finished stage, adapter included)
    loads as it was saved, its base in 4-bit or not as asked."""
    model = build_model(
        config.model,
        template=config.template,
        pooling=config.pooling,
        dtype=config.dtype,
        quantization=quantization_settings(config.adapter) if quantized else {},
        prompt=config.adapter.prompt_kwargs(),
    )
    use_prompt(model, config.prompt, config.prompt_name)
    return add_mlp_head(model) if head and config.pooling_head == "mlp" else model


def load_for_training(config: RunConfig, source: str | None) -> SentenceTransformer:
    """The base model (``source=None``) or a finished stage's saved model, ready to train, in the run's dtype."""
    if source is None:
        model = load_base(config)
    else:  # a finished stage's model carries the run's prompt; a config that names one gives it to any
        model = use_prompt(build_model(source, dtype=config.dtype), config.prompt, config.prompt_name)
    attach_adapter(model, config.adapter)
    name_base_model(model, config.model)  # the card every saved stage gets names the run's base model
    return model


def eval_precision(config: RunConfig) -> str | None:
    """The base precision of a QLoRA run's test evaluations (``16bit`` / ``4bit``); None for other runs."""
    return config.eval_precision if config.adapter.kind == "qlora" else None


def prepare_for_eval(model: SentenceTransformer, config: RunConfig) -> SentenceTransformer:
    """``model`` in the run's evaluation dtype (``eval_dtype: bf16`` casts it), returned for chaining."""
    if config.eval_dtype == "bf16":
        model.to(torch.bfloat16)
    return model


def dev_line(result: StageResult, keep_start: bool) -> str:
    """The stage's best dev score and its checkpoint, with the starting model's score, on the test scores' scale
    (× 100; the dev evaluator and the record keep fractions); where the best was the last dev evaluation, that its
    score may still have been rising; where no checkpoint beat the start, it says so plainly and what the stage
    saved as ``final`` (``keep_start_if_best``)."""
    best, start = result.best_dev, result.start_dev
    if best is None:
        return "no dev score"
    line = f"best dev {best * 100:.2f} (Spearman × 100) at {result.best_checkpoint}"
    if result.best_at_last_evaluation:
        line += ", its last dev evaluation: the dev score may still have been rising (a longer schedule may do better)"
    if start is None:
        return line
    line += f" (start {start * 100:.2f})"
    if start_beaten(start, best) is False:
        final = (
            "the starting model (keep_start_if_best)"
            if keep_start
            else "that checkpoint all the same (keep_start_if_best: true saves the starting model instead)"
        )
        line += f"; no checkpoint beat the starting model on dev, so training did not help there: final is {final}"
    return line


def load_for_evaluation(config: RunConfig, final: Path) -> SentenceTransformer:
    """A finished stage's model as the test evaluations see it: a QLoRA adapter on the 16-bit base by default
    (the authors' ``--load_kbit 16``), or on the 4-bit base it trained against (``eval_precision: 4bit``)."""
    return build_model(str(final), dtype=config.dtype, full_precision_base=eval_precision(config) == "16bit")


def stage_record(
    stage: StageConfig,
    suffix: str,
    source: str | None,
    result: StageResult,
    model: SentenceTransformer,
    senteval: Path,
) -> StageRecord:
    """The record of a stage trained (``result``; ``source``: the model it continued, ``None`` for the base)."""
    return StageRecord(
        stage=stage.name + suffix,
        loss=stage.loss,
        init=None if source is None else stage.init,
        prompt=prompt_in_force(model),
        train_examples=result.examples,
        trainable_fraction=round(trainable_fraction(model), 6),
        best_checkpoint=result.best_checkpoint,
        best_dev_spearman=result.best_dev,
        start_dev_spearman=result.start_dev,
        best_at_last_evaluation=result.best_at_last_evaluation,
        skipped_steps=skipped_steps(result.log_history),
        final_dir=str(result.final_dir),
        plot=str(result.plot),
        wall_time_s=result.cost.seconds,
        cpu_time_s=result.cost.cpu_seconds,
        torch_threads=None if result.cost.threads is None else list(result.cost.threads),
        peak_memory_mb=result.cost.peak_memory_mb,
        memory_kind=result.memory_kind,
        sessions=result.cost.sessions,
        dev_pairs={part: len(pairs) for part, pairs in stage_dev_parts(stage, senteval).items()},
        leakage_filter=leakage_filter(stage, senteval),
    )


@dataclass
class Pipeline:
    """One run of ``config``: the stages in order, an STS evaluation after each, one ``RunResult``.

    ``tasks`` replaces the protocol's seven test tasks (``[]``: no test evaluation at all)."""

    config: RunConfig
    senteval: Path
    console: Console
    resume: bool = False
    compare: list[str] | None = None
    callbacks: list[Any] | None = None
    resume_from: str | None = None
    tasks: InitVar[list[STSTask] | None] = None
    test_tasks: list[STSTask] = field(init=False)
    main: bool = field(init=False)
    result: RunResult = field(init=False)
    restarted: bool = field(init=False, default=False)
    """Whether a stage has continued from ``resume_from``: every later stage is then trained again."""

    def __post_init__(self, tasks: list[STSTask] | None) -> None:
        config = self.config
        self.test_tasks = tasks if tasks is not None else run_test_tasks(config, self.senteval)
        self.main = is_main_process()
        self.result = RunResult(
            protocol=config.eval_protocol,
            data_dir=str(self.senteval),
            seed=config.seed,
            versions=library_versions(),
            **record_settings(),
            config=config.model_dump(mode="json"),
            eval_precision=eval_precision(config),
            pairs_by_task={task.name: len(task.pairs) for task in self.test_tasks},
            data_files_sha256=file_hashes(
                [path for task in self.test_tasks for path in task.files]
                + [path for stage in config.stages for path in stage_data_files(stage, self.senteval)],
                self.senteval,
            ),
        )
        partial = Path(config.output_dir) / PARTIAL_RESULTS
        if self.resume and partial.is_file():  # every rank: they must agree on what is left to score
            kept = RunResult.from_disk(partial)
            check_same_data(kept, self.result, Path(config.output_dir))
            self.result.sts_by_stage, self.result.stages = kept.sts_by_stage, kept.stages
            self.result.eval_wall_time_s = kept.eval_wall_time_s

    def record(self) -> None:
        """Save what the run has recorded so far (rank 0), for a resume to keep."""
        if self.main:
            self.result.to_disk(Path(self.config.output_dir) / PARTIAL_RESULTS)

    def forget(self, label: str) -> None:
        """Drop the stage record and the evaluation of a stage about to train (again), its kept vectors too."""
        self.result.stages = [s for s in self.result.stages if s.stage != label]
        self.result.sts_by_stage.pop(label, None)
        self.result.eval_wall_time_s.pop(label, None)
        if self.main:
            self.store_path(label).unlink(missing_ok=True)

    def store_path(self, label: str) -> Path:
        """Where ``label``'s test vectors wait, in the run folder, until its scores are recorded."""
        return Path(self.config.output_dir) / f"eval-{label}{STORE_SUFFIX}"

    def stage_dir(self, index: int, stage: StageConfig, suffix: str = "") -> Path:
        """The folder of stage ``index`` (from 0) in the run folder: ``stage{index + 1}-{name}{suffix}``."""
        return Path(self.config.output_dir) / f"stage{index + 1}-{stage.name}{suffix}"

    def evaluate(self, label: str, model: SentenceTransformer, key: str | None = None) -> None:
        """Score ``model`` on the test tasks: every process encodes a shard (when distributed), rank 0 records. In
        one process, the vectors so far are kept in the run folder until the scores are recorded, so ``--resume``
        after an interrupt encodes only the rest. A stage's store is keyed by ``eval_key``; the base model's by
        ``key`` (`pcctune.orchestration.base_scores.before_key`, which holds the model as loaded: ``None`` keeps
        no vectors)."""
        if not self.test_tasks or (not self.main and not is_distributed()):
            return
        prepare_for_eval(model, self.config)
        store = None
        if not is_distributed():
            key = key if label == "before" else self.eval_key(label, model)
            if key is not None:
                store = VectorStore.open(self.store_path(label), key)
        protocol = self.config.eval_protocol
        started = time.perf_counter()
        shown = self.main and not self.console.quiet  # one progress bar, none for a quiet run
        scores, _ = evaluate_sts(model, self.test_tasks, protocol=protocol, show_progress=shown, store=store)
        if not self.main:
            return
        self.result.sts_by_stage[label] = score_section(scores)
        self.result.eval_wall_time_s[label] = round(time.perf_counter() - started, 3)
        self.record()
        if store is not None:
            store.discard()

    def eval_key(self, label: str, model: SentenceTransformer) -> str:
        """The key of the test vectors of stage ``label``'s ``model``, kept in the run folder: the run's fingerprint
        (the settings a resume must match: `pcctune.orchestration.run_folder`), the test pairs, and the code and
        device (`pcctune.modeling.fingerprint.settings_key`). The model is the stage's own, saved in the same
        folder, and ``forget`` removes the vectors whenever the stage trains again, so its weights are not read."""
        settings = {"label": label, "config": config_fingerprint(self.config), "tasks": tasks_digest(self.test_tasks)}
        return settings_key({"settings": settings}, model.device, COMPUTED_BY)

    def score_base(self) -> None:
        """The base model's test scores ("before"; the model itself: an untrained MLP head would only add noise),
        read from the cache where an earlier run scored the same model the same way
        (`pcctune.orchestration.base_scores`), otherwise scored and kept there. The model is loaded either way: the
        cache's key is read from it."""
        if not self.test_tasks:
            return
        precision = eval_precision(self.config)
        model = prepare_for_eval(load_base(self.config, quantized=precision == "4bit", head=False), self.config)
        key = before_key(self.config, self.test_tasks, precision, model)

        def score() -> dict[str, float]:
            self.evaluate("before", model, key)
            return self.result.sts_by_stage["before"]

        if key is None:
            score()
            return
        scores = scores_kept(key, score)
        if not self.scored("before"):
            self.result.sts_by_stage["before"] = scores
            self.record()
            self.console.print(
                "before: the base model's scores, from the cache (an earlier run scored the same model the same way)"
            )

    def scored(self, label: str) -> bool:
        """Whether ``label`` already has its test scores (kept from before a resume): not scored twice."""
        return label in self.result.sts_by_stage

    def train(self, index: int, stage: StageConfig, source: str | None, suffix: str) -> Path:
        """Train one stage (or find it finished) and return its folder. Each stage starts from the run's seed, so
        what it draws (an MLP head's or LoRA's first weights, a loss's head, its data order) does not depend on what
        the process drew before it: a stage found finished on a resume, or another ``--compare`` variant."""
        stage_dir = self.stage_dir(index, stage, suffix)
        from_here = (
            self.resume_from if self.resume_from and checkpoint_stage(self.resume_from) == stage_dir.resolve() else None
        )
        if self.main and (from_here is not None or self.restarted):  # the abandoned run's later steps go
            drop_checkpoints_after(stage_dir / CHECKPOINTS, from_here)
        self.restarted = self.restarted or from_here is not None  # the stages after it follow it, none is finished
        recorded = any(kept.stage == stage.name + suffix for kept in self.result.stages)
        if self.resume and not self.restarted and is_saved_model(stage_dir / FINAL) and recorded:
            self.console.print(f"stage {stage.name}{suffix}: finished earlier, loading {stage_dir / FINAL}")
            return stage_dir
        self.forget(stage.name + suffix)
        set_seed(self.config.seed)
        model = load_for_training(self.config, source)
        stages = self.config.stages
        result = run_stage(
            model,
            stage,
            self.config,
            stage_dir,
            self.senteval,
            resume=self.resume,
            callbacks=self.callbacks,
            checkpoint=from_here,
            keep_last=index + 1 < len(stages) and stages[index + 1].init == "final",
            quiet=self.console.quiet,
        )
        record = stage_record(stage, suffix, source, result, model, self.senteval)
        self.result.stages.append(record)
        self.record()
        skipped = f"; {record.skipped_steps} steps skipped for a non-finite loss or gradient (on_nonfinite: skip)"
        self.console.print(
            f"stage {record.stage}: {result.examples} training examples ({stage.loss}); "
            f"{dev_line(result, stage.keep_start_if_best)}{skipped if record.skipped_steps else ''}"
        )
        return stage_dir

    def audit(self) -> None:
        """Every source each stage trains or selects on, checked against the test sets before the first step: one
        line each in the log, and the record's ``leakage_audit``."""
        self.result.leakage_audit = [e for stage in self.config.stages for e in stage_audit(stage, self.senteval)]
        if self.main:
            for entry in self.result.leakage_audit:
                self.console.print(audit_line(entry), highlight=False, markup=False, soft_wrap=True)

    def run(self) -> RunResult:
        """The sources audited, the base model scored where asked, then each stage trained from the last one's model and
        scored where the config says (each loss of ``compare`` at the last stage); a stage or score already recorded is
        kept. Returns the run's record."""
        self.audit()
        if self.config.evaluate_before and self.main and not self.scored("before"):  # no process group yet
            self.score_base()
        source: str | None = None
        last = len(self.config.stages) - 1
        for index, stage in enumerate(self.config.stages):
            variants = self.compare if (self.compare and index == last) else [stage.loss]
            for loss in variants:
                suffix = f"-{loss}" if self.compare and index == last else ""
                stage_dir = self.train(index, stage.model_copy(update={"loss": loss}), source, suffix)
                label = f"{stage.name}{suffix}"
                if (self.config.evaluate_after_each_stage or index == last) and not self.scored(label):
                    self.evaluate(label, load_for_evaluation(self.config, stage_dir / FINAL))
                if index < last:
                    source = str(continued_model(stage_dir, self.config.stages[index + 1].init))
        return self.result


def checkpoint_stage(checkpoint: str | Path) -> Path:
    """The stage folder a trainer checkpoint ``…/stageN-NAME/checkpoints/checkpoint-S`` belongs to, resolved."""
    return Path(checkpoint).resolve().parent.parent


def check_start(config: RunConfig, resume: bool, overwrite: bool, resume_from: str | None) -> None:
    """What a run refuses before anything else: a ``resume_from`` that is no trainer checkpoint, and (rank 0, which
    owns the folder; the other ranks start while it writes) a run folder it may not touch."""
    if resume_from is not None and not (Path(resume_from) / TRAINER_STATE).is_file():
        raise PcctuneError(f"{resume_from} is not a trainer checkpoint (no {TRAINER_STATE})")
    if resume_from is not None and checkpoint_stage(resume_from).parent != Path(config.output_dir).resolve():
        raise PcctuneError(
            f"{resume_from} is not a checkpoint of this run: give one of {config.output_dir}/stageN-NAME/checkpoints/"
        )
    if is_main_process():
        check_run_folder(config, resume, overwrite)


def finished(config: RunConfig, resume: bool, resume_from: str | None) -> bool:
    """A resumed run that has its results already: it trains and rewrites nothing."""
    return resume and resume_from is None and (Path(config.output_dir) / RESULTS).is_file()


@random_state_kept()
def run_pipeline(
    config: RunConfig,
    resume: bool = False,
    compare: list[str] | None = None,
    console: Console | None = None,
    callbacks: list[Any] | None = None,
    resume_from: str | None = None,
    tasks: list[STSTask] | None = None,
    overwrite: bool = False,
) -> RunResult:
    """Run every stage; return (and write to ``output_dir/results.json``) the STS numbers of each.

    ``resume_from`` names any checkpoint (``…/stageN-NAME/checkpoints/checkpoint-S``): earlier
    stages are taken as finished, and that stage continues from that step. ``tasks`` replaces
    the seven STS test tasks of the evaluations (e.g. subsamples for a quick benchmark); ``tasks=[]``
    reads no test set at all (sweep trials, which select on dev data only).
    A finished run resumed again is returned as it was saved, and nothing is rewritten. The run seeds the global
    random generators with its ``seed``; the caller's states are put back when it returns.
    """
    console = console or plain_console()
    resume = resume or resume_from is not None
    main = is_main_process()
    check_start(config, resume, overwrite, resume_from)
    out = Path(config.output_dir)
    if finished(config, resume, resume_from):
        console.print(f"{out} is finished; its results are unchanged")
        return RunResult.from_disk(out / RESULTS)
    senteval = senteval_folder(config.data_dir)
    pipeline = Pipeline(config, senteval, console, resume, compare, callbacks, resume_from, tasks)
    with waiting_checks() as audited:  # the leakage checks made before the first step wait for the run to end well
        validate_run(config, senteval, compare)
        with run_lock(out) if main else nullcontext():
            result = _run_in_folder(pipeline, overwrite)
        audited.keep()  # for the next run on the same data
    if main:
        result.to_disk(out / RESULTS)
        (out / PARTIAL_RESULTS).unlink(missing_ok=True)
        write_model_cards(config, result, senteval)
        if result.sts_by_stage:
            title = f"{config.model}: STS, {config.eval_protocol} protocol (Spearman × 100)"
            ScoreTable.from_rows(result.sts_by_stage, title=title).print(console)
        console.print(f"results -> {out / RESULTS}")
    barrier()  # every process returns once rank 0 has written the results
    return result


def write_model_cards(config: RunConfig, result: RunResult, senteval: Path) -> None:
    """The pcctune section in the card of every stage's saved model (scores, stages, leakage, config)."""
    leakage = None
    stage2 = [s for s in config.stages if s.data.source == "stage2"]
    if stage2:
        leakage = stage2_set(stage2[0].data, senteval).report_dict()
    for stage in result.stages:
        folder = Path(stage.final_dir)
        if is_saved_model(folder):
            write_card(folder, config, result, stage.stage, leakage)


def _run_in_folder(pipeline: Pipeline, overwrite: bool) -> RunResult:
    """Start the run folder (rank 0) and run; a fresh folder that failed before saving anything is removed."""
    out = Path(pipeline.config.output_dir)
    fresh = overwrite or is_empty(out)
    if pipeline.main:
        start_run_folder(pipeline.config, overwrite)
    set_seed(pipeline.config.seed)
    try:
        return pipeline.run()
    except NonFiniteTraining as stopped:
        if pipeline.main:
            mark_nonfinite_stop(pipeline.config, stopped.stage, stopped.step)
        raise
    except Exception:
        if pipeline.main and fresh:
            discard_if_nothing_to_resume(out)
        raise
