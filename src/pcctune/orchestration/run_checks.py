"""What a run is checked for before it trains, each check before any file is written or the model loads where it
can be: the config's data, losses, template cut, logging integration and precision (``validate_run``), and, on
resume, that the run's recorded scores rest on the same data (``check_same_data``)."""

from __future__ import annotations

from pathlib import Path

import torch
from pydantic import ValidationError
from transformers.integrations import get_available_reporting_integrations

from pcctune.distributed import launched_world_size
from pcctune.errors import PcctuneError, first_refusal
from pcctune.evaluation.protocols import get_protocol
from pcctune.losses.registry import resolve_loss, warn_if_renamed
from pcctune.modeling.adapters import quantization_settings
from pcctune.modeling.build import ModelSource, check_loadable_offline, resolve_source, saved_template
from pcctune.modeling.cpu_bf16 import warn_if_emulated_bf16
from pcctune.modeling.prompts import check_prompt_name
from pcctune.results import RunResult
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.datasets import check_stage_data


def compared_stages(stage: StageConfig, compare: list[str]) -> list[StageConfig]:
    """``stage`` once per ``--compare`` loss, each checked as a config with that loss would be (its settings, e.g.
    ``group_by_source``, must suit the loss): one line for an unknown loss, one named twice, or a setting it refuses."""
    variants: list[StageConfig] = []
    for loss in compare:
        try:
            current = resolve_loss(loss)
        except ValueError as error:
            raise PcctuneError(f"--compare: {error}") from None
        if current in [variant.loss for variant in variants]:
            raise PcctuneError(f"--compare names {current!r} twice; each loss trains once")
        warn_if_renamed(loss)
        try:
            variants.append(StageConfig.model_validate({**stage.model_dump(), "loss": current}))
        except ValidationError as error:
            where, message = first_refusal(error, StageConfig)
            raise PcctuneError(f"--compare {loss}: {where + ': ' if where else ''}{message}") from None
    return variants


def planned_stages(config: RunConfig, compare: list[str] | None) -> list[tuple[StageConfig, str]]:
    """Each stage the run trains and its label: the last stage once per ``compare`` loss (``compared_stages``),
    labelled as the run names its folder (``NAME-LOSS``, the loss as given)."""
    labelled = [(stage, stage.name) for stage in config.stages]
    if compare:
        last = labelled.pop()[0]
        variants = compared_stages(last, compare)
        labelled += [(variant, f"{last.name}-{loss}") for loss, variant in zip(compare, variants, strict=True)]
    return labelled


def validate_run(config: RunConfig, senteval: Path, compare: list[str] | None = None) -> list[tuple[StageConfig, str]]:
    """Everything that can fail before training, checked before any file is written: with ``compare``, the last
    stage's data under each loss compared in its place. Returns the stages it checked (``planned_stages``)."""
    protocol = get_protocol(config.eval_protocol)
    source = resolve_source(config.model)
    check_loadable_offline(source)
    if source.origin != "local":  # a saved folder may carry a template: checked when scored
        protocol.check_model(config.template, config.model)
    check_sentence_cut(config, source)
    check_prompt_name(source, config.prompt_name)
    quantization_settings(config.adapter)
    check_report_to(config.report_to)
    stages = planned_stages(config, compare)
    for stage, _ in stages:
        check_stage_data(stage, senteval)
        check_one_process_losses(stage)
    warn_bf16_on_cpu(config)
    return stages


def check_one_process_losses(stage: StageConfig) -> None:
    """DCPCSE's auxiliary MLM term runs the input module outside DDP's forward, so its gradients would not be
    synchronised across processes (and the wrapped model is no longer indexable): refused where several are
    launched."""
    if stage.mlm.enabled and launched_world_size() > 1:
        raise PcctuneError(
            f"stage {stage.name!r}: DCPCSE's auxiliary MLM term trains in one process only; launch the run without "
            "torchrun/accelerate, or set mlm.enabled: false"
        )


def check_sentence_cut(config: RunConfig, source: ModelSource) -> None:
    """``sentence_max_tokens`` cuts the sentence before it fills a template (the authors' ``cutoff_len``): refused
    before the model loads or an earlier stage trains when neither the run nor the model's folder has one (a Hub
    model's template is known once it loads: its stage checks it then)."""
    cut = next((stage for stage in config.stages if stage.sentence_max_tokens is not None), None)
    if cut is None or config.template is not None or source.origin == "hub" or saved_template(source) is not None:
        return
    raise PcctuneError(
        f"stage {cut.name!r}: sentence_max_tokens cuts the sentence before it fills the template, and "
        f"{config.model} has none: give the run a template (e.g. eol), or use max_seq_length"
    )


def check_report_to(report_to: str) -> None:
    """The HF Trainer's logging integration ``report_to`` names is installed (checked before the model loads; the
    trainer would refuse it only when the first stage starts)."""
    if report_to != "none" and report_to not in get_available_reporting_integrations():
        raise PcctuneError(f"report_to: {report_to} logs through its own package: pip install {report_to}")


def warn_bf16_on_cpu(config: RunConfig) -> None:
    """One line when a run on the CPU asks for bf16 that the CPU can only emulate (``pcctune.modeling.cpu_bf16``):
    slower than fp32 there."""
    if torch.cuda.is_available():
        return
    asked = [
        f"{name}: bf16"
        for name, value in (("dtype", config.dtype), ("eval_dtype", config.eval_dtype))
        if value == "bf16"
    ]
    asked += [f"stage {stage.name!r}: bf16: true" for stage in config.stages if stage.bf16]
    if asked:
        warn_if_emulated_bf16(", ".join(asked))


def check_same_data(kept: RunResult, now: RunResult, out: Path) -> None:
    """Refuse to resume a run whose recorded scores rest on other data: other test sets (``tasks``, another data
    folder's files) or a test or training file changed since the run began: by name where both records name the
    file, by content where the old record names it otherwise (older versions named files differently). A record
    from before pcctune kept hashes (none recorded) is not checked."""
    if kept.pairs_by_task and kept.pairs_by_task != now.pairs_by_task:
        raise PcctuneError(
            f"{out} was scored on other test sets ({', '.join(kept.pairs_by_task)}); resume it with the same tasks "
            "and data, or start another output_dir"
        )
    current, present = now.data_files_sha256, set(now.data_files_sha256.values())
    changed = sorted(
        name
        for name, digest in kept.data_files_sha256.items()
        if (current[name] != digest if name in current else digest not in present)
    )
    if changed:
        raise PcctuneError(
            f"{out}: {changed[0]} is not the file the run began with ({len(changed)} data file(s) differ); resume "
            "it on the same data, or start another output_dir"
        )
