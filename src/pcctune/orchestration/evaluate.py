"""``pcctune eval``: build a model, evaluate STS and/or transfer tasks, print and save an :class:`EvalResult`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from rich.console import Console
from transformers import set_seed

from pcctune.data.sts import STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.data.transfer import TRANSFER_TASKS, TransferTask, load_transfer_task
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, get_protocol, protocol_data_dir
from pcctune.evaluation.sts import evaluate_sts
from pcctune.evaluation.tables import ScoreTable
from pcctune.evaluation.transfer import evaluate_transfer
from pcctune.io import check_output_file
from pcctune.modeling.backends import Backend, use_backend
from pcctune.modeling.build import PoolingName, build_model
from pcctune.modeling.encoding import DEFAULT_TOKEN_BUDGET
from pcctune.modeling.template import model_template
from pcctune.paths import resolve_senteval_dir
from pcctune.provenance import file_hashes, library_versions
from pcctune.results import EvalResult, TaskScore, TransferScore

TaskGroup = Literal["sts", "transfer", "all"]


def add_scores(
    result: EvalResult, sts: tuple[list[TaskScore], float] | None, transfer: list[TransferScore] | None
) -> None:
    """Put the scores (rounded headline numbers and full detail) into ``result`` and print their tables."""
    if sts is not None:
        scores, avg = sts
        result.sts = {s.name: round(s.spearman, 4) for s in scores} | {"avg": round(avg, 4)}
        result.sts_detail = scores
        title = f"STS, {result.protocol} protocol (Spearman × 100)"
        ScoreTable.from_rows({result.model: result.sts}, title=title).print()
    if transfer is not None:
        result.transfer = {t.name: round(t.accuracy, 2) for t in transfer}
        result.transfer["avg"] = round(sum(t.accuracy for t in transfer) / len(transfer), 2)
        result.transfer_detail = transfer
        title = "Transfer tasks (accuracy, logistic-regression probe)"
        ScoreTable.from_rows({result.model: result.transfer}, title=title).print()


def load_tasks(senteval: Path, tasks: TaskGroup, protocol: str) -> tuple[list[STSTask], list[TransferTask]]:
    """The STS tasks (in the protocol's text form) and the transfer tasks of a task group."""
    get_protocol(protocol)
    sts = load_test_tasks(protocol_data_dir(senteval, protocol)) if tasks in ("sts", "all") else []
    transfer = [load_transfer_task(senteval, n) for n in TRANSFER_TASKS] if tasks in ("transfer", "all") else []
    return sts, transfer


def run_eval(
    model_spec: str,
    data: Path | None,
    *,
    tasks: TaskGroup = "sts",
    template: str | None = None,
    pooling: PoolingName | None = None,
    dtype: str = "fp32",
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    max_seq_length: int | None = None,
    seed: int = 42,
    output: Path | None = None,
    console: Console | None = None,
    protocol: str = DEFAULT_PROTOCOL,
    backend: Backend = "torch",
) -> EvalResult:
    """Evaluate ``model_spec`` on ``sts`` (the seven tasks), ``transfer`` (the seven probes) or ``all``.

    The output path, the data and the model are checked before any encoding; the result is
    written (atomically) only when the whole evaluation has finished.
    """
    started = time.perf_counter()
    if output is not None:
        check_output_file(output)
    senteval = resolve_senteval_dir(data)
    sts_tasks, transfer_tasks = load_tasks(senteval, tasks, protocol)
    set_seed(seed)
    model = build_model(model_spec, template=template, pooling=pooling, max_seq_length=max_seq_length, dtype=dtype)
    model = use_backend(model, Path(model_spec), backend)
    sts = evaluate_sts(model, sts_tasks, token_budget=token_budget, protocol=protocol) if sts_tasks else None
    transfer = evaluate_transfer(model, transfer_tasks, token_budget=token_budget) if transfer_tasks else None
    result = EvalResult(
        protocol=protocol,
        model=model_spec,
        template=model_template(model),
        pooling=getattr(model[1], "pooling_mode", None),
        dtype=dtype,
        seed=seed,
        data_dir=str(senteval),
        data_files_sha256=file_hashes(
            [*(f for t in sts_tasks for f in t.files), *(f for t in transfer_tasks for f in t.files)]
        ),
        versions=library_versions(),
        wall_time_s=round(time.perf_counter() - started, 2),
    )
    add_scores(result, sts, transfer)
    if output is not None:
        result.to_disk(output)
        (console or Console()).print(f"results -> {output}")
    return result
