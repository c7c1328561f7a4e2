"""``pcctune compare --bootstrap``: B − A of two models scored on the same STS test pairs, each difference's 95 %
interval from a paired bootstrap over the pairs (``pcctune.evaluation.compare.paired_bootstrap_mean``: the test
set's noise, not the seeds'). A run given as a side is scored as its own test evaluations scored it
(``pcctune.orchestration.pipeline.load_for_evaluation``: its protocol, dtype, evaluation dtype and a QLoRA run's
evaluation base, on the test files its record hashed)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer

from pcctune.correlation import correlation
from pcctune.data.cache import senteval_folder
from pcctune.data.sts import STSTask
from pcctune.errors import PcctuneError, some_of
from pcctune.evaluation.compare import TestSet, check_finite, paired_bootstrap_mean
from pcctune.evaluation.interval import CONFIDENCE, RESAMPLES
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, load_protocol_tasks
from pcctune.evaluation.sts import task_cosines
from pcctune.modeling.build import build_model
from pcctune.modeling.dtypes import loaded_dtype_name
from pcctune.modeling.prompts import prompt_in_force
from pcctune.modeling.quantization import loaded_quantization
from pcctune.modeling.saving import is_saved_model
from pcctune.orchestration.compare_sides import (
    AVERAGE,
    chosen_variant,
    run_config,
)
from pcctune.orchestration.pipeline import load_for_evaluation, prepare_for_eval
from pcctune.orchestration.run_folder import RESULTS
from pcctune.provenance import file_hashes, library_versions
from pcctune.results import CompareResult, RunResult, ScoredModel
from pcctune.seeding import BOOTSTRAP_SEED, DEFAULT_SEED, seeded


def run_record(spec: str | Path) -> Path | None:
    """The run record of a bootstrap's side: ``spec`` itself (a ``results.json``) or the one in the run folder
    ``spec``; None where ``spec`` is a model (a packaged short name, a model folder, a Hub id)."""
    path = Path(spec)
    if path.name == RESULTS and path.is_file():
        return path
    if path.is_dir() and (path / RESULTS).is_file():
        return path / RESULTS
    return None


def bootstrap_protocol(protocol: str | None, runs: Sequence[tuple[Path, RunResult]]) -> str:
    """The protocol both models are scored under: the runs' own (a run is scored as it scored itself), else
    ``protocol`` (default: ``DEFAULT_PROTOCOL``)."""
    for file, record in runs:
        if record.protocol != (protocol or record.protocol):
            raise PcctuneError(
                f"{file}: the run scored its models under the {record.protocol} protocol, not {protocol}; "
                "compare it under its own (leave out --protocol)"
            )
        protocol = record.protocol
    return protocol or DEFAULT_PROTOCOL


DIFFERENCES_SHOWN = 3
"""The differing test files (or tasks) a refusal names; the rest it counts, so that the error stays one line."""


def check_test_files(file: Path, record: RunResult, tasks: Sequence[STSTask], senteval: Path) -> None:
    """Refuse a run whose record says it scored other test pairs than ``tasks`` (other files, or other pair counts)
    than those of ``senteval``; a record before schema 3 names none, and is taken as it is."""
    hashes = file_hashes([path for task in tasks for path in task.files], senteval)
    recorded = record.data_files_sha256
    differ = [name for name, digest in hashes.items() if recorded and recorded.get(name) != digest]
    differ += [
        task.name for task in tasks if record.pairs_by_task and record.pairs_by_task.get(task.name) != len(task.pairs)
    ]
    if differ:
        raise PcctuneError(
            f"{file}: the run scored other test pairs than {senteval} holds ({some_of(differ, DIFFERENCES_SHOWN)}); "
            "give the folder it scored (--data)"
        )


def side_model(
    spec: str | Path, run: tuple[Path, RunResult] | None, variant: str | None
) -> tuple[str, SentenceTransformer]:
    """What one side of a bootstrap loads, and the model as its scores are computed: a run's final stage
    (``variant``) as the run's test evaluations load it, or a model as ``pcctune eval`` does."""
    if run is None:
        if variant is not None:
            raise PcctuneError(f"--variant names a run's final stage; {spec} is a model, not a run")
        with seeded(DEFAULT_SEED):  # a layer the saved model lacks is drawn the same way each time, as pcctune eval
            return str(spec), build_model(str(spec))
    file, record = run
    label = chosen_variant(record, file, variant)
    stage = next((stage for stage in record.stages if stage.stage == label), None)
    final = Path(stage.final_dir) if stage is not None else None
    if final is None or not is_saved_model(final):
        raise PcctuneError(f"{file}: the saved model of its stage {label} is not there ({final})")
    config = run_config(record, file)
    return str(final), prepare_for_eval(load_for_evaluation(config, final), config)


def scored_model(model: SentenceTransformer) -> ScoredModel:
    """What ``model`` reads and computes in as it is scored: its prompt, dtype and quantization."""
    return ScoredModel(
        prompt=prompt_in_force(model), dtype=loaded_dtype_name(model), quantization=loaded_quantization(model)
    )


def chosen_tasks(tasks: list[STSTask], task: str | None) -> list[STSTask]:
    """``tasks``, or only the one named ``task`` (an unknown name is an error naming the choices)."""
    if task is None:
        return tasks
    names = [t.name for t in tasks]
    if task not in names:
        raise PcctuneError(f"unknown task {task!r}; choose from {', '.join(names)} (or none for all and avg)")
    return [t for t in tasks if t.name == task]


def checked_test_sets(names: list[str], sides: list[tuple[str, list[tuple[Any, Any]]]]) -> list[TestSet]:
    """Each task's (gold, A's cosines, B's cosines), from each side's ``(source, [(cosines, gold) per task])``; a
    cosine that is not a finite number is an error naming the side, its model and the task."""
    test_sets: list[TestSet] = []
    (source_a, cosines_a), (source_b, cosines_b) = sides
    for name, (a, gold), (b, _) in zip(names, cosines_a, cosines_b, strict=True):
        for side, values, source in (("A", a, source_a), ("B", b, source_b)):
            check_finite(values, f"{side} ({source}): its cosines on {name}")
        test_sets.append((gold, a, b))
    return test_sets


def task_scores(names: list[str], test_sets: list[TestSet], side: int) -> dict[str, float]:
    """Spearman × 100 of one side's predictions with the gold scores, per task (``side``: 1 for A, 2 for B, their
    places in a ``TestSet``)."""
    return {
        name: correlation(np.asarray(test[side]), np.asarray(test[0])).spearman * 100
        for name, test in zip(names, test_sets, strict=True)
    }


def compare_models(
    model_a: str | Path,
    model_b: str | Path,
    data: str | Path | None = None,
    protocol: str | None = None,
    task: str | None = None,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = RESAMPLES,
    variant_a: str | None = None,
    variant_b: str | None = None,
) -> CompareResult:
    """B − A of two models' Spearman × 100 on the seven STS test sets (or only ``task``), with the 95 % interval of
    a paired bootstrap over the test pairs (``resamples`` draws seeded by ``seed``): the test set's noise, not the
    seeds'. With every task, ``avg`` too (each set resampled on its own;
    ``pcctune.evaluation.compare.paired_bootstrap_mean``).

    ``model_a``, ``model_b``: anything ``pcctune eval`` loads, scored under ``protocol`` (default
    ``DEFAULT_PROTOCOL``), or a run folder (or its ``results.json``): its final stage's model (``variant_a``,
    ``variant_b``: which one, for a run trained with ``--compare``), loaded and scored as the run's own test
    evaluations were (its protocol, dtype, evaluation dtype and evaluation base), so that its score here is the
    one in its record. A run whose record names other test files or pair counts than ``data`` holds is refused."""
    senteval = senteval_folder(data)
    records = [(file, RunResult.from_disk(file)) if file else None for file in map(run_record, (model_a, model_b))]
    protocol = bootstrap_protocol(protocol, [run for run in records if run is not None])
    tasks = chosen_tasks(load_protocol_tasks(senteval, protocol), task)
    for run in (run for run in records if run is not None):
        check_test_files(*run, tasks, senteval)
    sides = [
        side_model(spec, run, variant)
        for spec, run, variant in zip((model_a, model_b), records, (variant_a, variant_b), strict=True)
    ]
    names = [t.name for t in tasks]
    test_sets = checked_test_sets(names, [(source, task_cosines(model, tasks, protocol)) for source, model in sides])
    per_task, average = paired_bootstrap_mean(test_sets, "spearman", CONFIDENCE, resamples, seed)
    scores_a, scores_b = (task_scores(names, test_sets, side) for side in (1, 2))
    differences = dict(zip(names, per_task, strict=True))
    if len(tasks) > 1:  # the seven tasks: their plain mean, as a run's avg
        for scores in (scores_a, scores_b):
            scores[AVERAGE] = math.fsum(scores.values()) / len(names)
        differences[AVERAGE] = average
    variants = {"variant_a": variant_a, "variant_b": variant_b}
    (source_a, scored_a), (source_b, scored_b) = ((source, scored_model(model)) for source, model in sides)
    sides_of = {"a": [source_a], "b": [source_b], "model_a": scored_a, "model_b": scored_b}
    sources = {"protocol": protocol, "data_dir": str(senteval), "seed": seed}
    found = {"mean_a": scores_a, "mean_b": scores_b, "differences": differences}
    return CompareResult(**sides_of, **sources, **variants, **found, versions=library_versions())
