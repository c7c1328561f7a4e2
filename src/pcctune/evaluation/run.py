"""``pcctune eval``: build a model, evaluate STS and/or transfer tasks, print and save the results."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from transformers import set_seed

from pcctune.data.senteval import load_test_tasks
from pcctune.data.transfer import TRANSFER_TASKS, load_transfer_task
from pcctune.evaluation.record import eval_record, print_table, sts_table, write_json
from pcctune.evaluation.sts import PROTOCOL, evaluate_sts
from pcctune.evaluation.transfer import evaluate_transfer
from pcctune.modeling.build import build_model, model_template
from pcctune.paths import resolve_senteval_dir


def run_eval(
    model_spec: str,
    data: Path | None,
    *,
    tasks: str = "sts",
    template: str | None = None,
    pooling: str | None = None,
    dtype: str = "fp32",
    batch_size: int = 64,
    max_seq_length: int | None = None,
    seed: int = 42,
    output: Path | None = None,
    console: Console | None = None,
) -> dict:
    """Evaluate ``model_spec`` on ``sts`` (the seven tasks), ``transfer`` (the seven probes) or ``all``."""
    started = time.perf_counter()
    senteval = resolve_senteval_dir(data)
    sts_tasks = load_test_tasks(senteval) if tasks in ("sts", "all") else []
    transfer_tasks = [load_transfer_task(senteval, n) for n in TRANSFER_TASKS] if tasks in ("transfer", "all") else []
    set_seed(seed)
    model = build_model(model_spec, template=template, pooling=pooling, max_seq_length=max_seq_length, dtype=dtype)
    sts = evaluate_sts(model, sts_tasks, batch_size=batch_size) if sts_tasks else None
    transfer = evaluate_transfer(model, transfer_tasks, batch_size=batch_size) if transfer_tasks else None
    record = eval_record(
        model=model_spec, template=model_template(model), pooling=getattr(model[1], "pooling_mode", None),
        dtype=dtype, seed=seed, data_dir=senteval,
        data_files=[f for t in sts_tasks for f in t.files] + [f for t in transfer_tasks for f in t.files],
        wall_time_s=time.perf_counter() - started, protocol=PROTOCOL, sts=sts, transfer=transfer,
    )
    if sts is not None:
        print_table(sts_table({model_spec: record["sts"]}, title=f"STS, {PROTOCOL} protocol (Spearman × 100)"))
    if transfer is not None:
        print_table(sts_table({model_spec: record["transfer"]}, title="Transfer tasks (accuracy, logistic-regression probe)"))
    if output is not None:
        write_json(record, output)
        (console or Console()).print(f"results -> {output}")
    return record
