"""The Pcc-tuning pipeline: stage 1 (contrastive) then stage 2 (Pearson), evaluated after each.

``compare`` reruns the last stage once per loss (e.g. ``pearson`` and ``contrastive``, the
§4.3 ablation) from the same starting point, and prints them side by side. ``resume`` skips
finished stages (their ``final/`` folder exists) and continues an interrupted stage from its
last checkpoint, adapter included.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from rich.console import Console
from sentence_transformers import SentenceTransformer
from transformers import set_seed

from pcctune.data.senteval import load_test_tasks
from pcctune.data.sts import STSTask
from pcctune.distributed import is_main_process
from pcctune.errors import PcctuneError
from pcctune.evaluation.record import library_versions, print_table, sts_table, write_json
from pcctune.evaluation.sts import PROTOCOL, evaluate_sts
from pcctune.modeling.adapters import attach_adapter, quantization_kwargs, trainable_fraction
from pcctune.modeling.build import build_model
from pcctune.paths import resolve_senteval_dir
from pcctune.training.config import RunConfig, StageConfig, dump_config
from pcctune.training.stage import StageResult, run_stage


def _load(config: RunConfig, source: str | None) -> SentenceTransformer:
    """The base model (``source=None``) or a finished stage's saved model, ready to train."""
    if source is None:
        model = build_model(config.model, template=config.template, pooling=config.pooling, dtype=config.dtype,
                            model_kwargs=quantization_kwargs(config.adapter), prompt=config.adapter.prompt_kwargs())
    else:
        model = build_model(source)
    attach_adapter(model, config.adapter)
    return model


def _stage_dir(config: RunConfig, index: int, stage: StageConfig, suffix: str = "") -> Path:
    return Path(config.output_dir) / f"stage{index + 1}-{stage.name}{suffix}"


def run_pipeline(
    config: RunConfig,
    resume: bool = False,
    compare: list[str] | None = None,
    console: Console | None = None,
    callbacks: list | None = None,
    resume_from: str | None = None,
    tasks: list[STSTask] | None = None,
) -> dict:
    """Run every stage; return (and write to ``output_dir/results.json``) the STS numbers of each.

    ``resume_from`` names any checkpoint (``…/stageN-NAME/checkpoints/checkpoint-S``): earlier
    stages are taken as finished, and that stage continues from that step. ``tasks`` replaces
    the seven STS test tasks of the evaluations (e.g. subsamples for a quick benchmark).
    """
    if resume_from is not None:
        checkpoint = Path(resume_from)
        if not (checkpoint / "trainer_state.json").is_file():
            raise PcctuneError(f"{checkpoint} is not a trainer checkpoint (no trainer_state.json)")
        resume = True
    console = console or Console(width=160)
    out = Path(config.output_dir)
    if is_main_process():
        dump_config(config, out / "config.yaml")
    senteval = resolve_senteval_dir(config.data_dir)
    tasks = tasks if tasks is not None else load_test_tasks(senteval)
    set_seed(config.seed)
    rows: dict[str, dict[str, float]] = {}
    stages_report: list[dict] = []

    main = is_main_process()

    def evaluate(label: str, model: SentenceTransformer) -> None:
        if not main:  # one process evaluates; the others only train
            return
        if config.eval_dtype == "bf16":
            model.to(torch.bfloat16)
        scores, avg = evaluate_sts(model, tasks)
        rows[label] = {s.name: round(s.spearman, 4) for s in scores} | {"avg": round(avg, 4)}

    def train(index: int, stage: StageConfig, source: str | None, suffix: str = "") -> StageResult | Path:
        stage_dir = _stage_dir(config, index, stage, suffix)
        checkpoint = resume_from if resume_from and Path(resume_from).parent.parent == stage_dir else None
        if resume and checkpoint is None and (stage_dir / "final" / "modules.json").is_file():
            console.print(f"stage {stage.name}{suffix}: finished earlier, loading {stage_dir / 'final'}")
            return stage_dir / "final"
        model = _load(config, source)
        started = time.perf_counter()
        result = run_stage(model, stage, config, stage_dir, senteval, resume=resume, callbacks=callbacks,
                           checkpoint=checkpoint)
        stages_report.append({
            "stage": stage.name + suffix, "loss": stage.loss, "train_examples": result.examples,
            "trainable_fraction": round(trainable_fraction(model), 6), "best_checkpoint": result.best_checkpoint,
            "best_dev_spearman": result.best_dev, "final_dir": str(result.final_dir), "plot": str(result.plot),
            "wall_time_s": round(time.perf_counter() - started, 1),
        })
        console.print(f"stage {stage.name}{suffix}: {result.examples} training examples ({stage.loss}); "
                      f"best dev {result.best_dev} at {result.best_checkpoint}")
        return result

    def final_of(result: StageResult | Path) -> str:
        return str(result if isinstance(result, Path) else result.final_dir)

    if config.evaluate_before and main:
        evaluate("before", _load(config, None))
    source: str | None = None
    last = len(config.stages) - 1
    for index, stage in enumerate(config.stages):
        variants = compare if (compare and index == last) else [stage.loss]
        for loss in variants:
            variant = stage.model_copy(update={"loss": loss})
            suffix = f"-{loss}" if compare and index == last else ""
            result = train(index, variant, source, suffix)
            if main and (config.evaluate_after_each_stage or index == last):
                evaluate(f"{stage.name}{suffix}", build_model(final_of(result)))
            if index < last:
                source = final_of(result)

    record = {
        "protocol": PROTOCOL, "data_dir": str(senteval), "seed": config.seed, "versions": library_versions(),
        "config": config.model_dump(), "sts": rows, "stages": stages_report,
    }
    if main:
        write_json(record, out / "results.json")
        print_table(sts_table(rows, title=f"{config.model}: STS, {PROTOCOL} protocol (Spearman × 100)"))
        console.print(f"results -> {out / 'results.json'}")
    return record
