"""``pcctune eval``: build a model, evaluate the seven STS tasks, print and save the results."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from transformers import set_seed

from pcctune.data.senteval import load_test_tasks
from pcctune.evaluation.record import print_table, sts_record, sts_table, write_json
from pcctune.evaluation.sts import PROTOCOL, evaluate_sts
from pcctune.modeling.build import build_model, model_template
from pcctune.paths import resolve_senteval_dir


def run_sts_eval(
    model_spec: str,
    data: Path | None,
    *,
    template: str | None = None,
    pooling: str | None = None,
    dtype: str = "fp32",
    batch_size: int = 64,
    max_seq_length: int | None = None,
    seed: int = 42,
    output: Path | None = None,
    console: Console | None = None,
) -> dict:
    """Evaluate ``model_spec`` on STS12–16, STS-B and SICK-R; return (and optionally save) the record."""
    started = time.perf_counter()
    senteval = resolve_senteval_dir(data)
    tasks = load_test_tasks(senteval)
    set_seed(seed)
    model = build_model(model_spec, template=template, pooling=pooling, max_seq_length=max_seq_length, dtype=dtype)
    scores, avg = evaluate_sts(model, tasks, batch_size=batch_size)
    record = sts_record(
        scores, avg, model=model_spec, template=model_template(model),
        pooling=getattr(model[1], "pooling_mode", None), dtype=dtype, seed=seed, data_dir=senteval,
        data_files=[f for t in tasks for f in t.files], wall_time_s=time.perf_counter() - started,
        protocol=PROTOCOL,
    )
    print_table(sts_table({model_spec: record["sts"]}, title=f"STS, {PROTOCOL} protocol (Spearman × 100)"))
    if output is not None:
        write_json(record, output)
        (console or Console()).print(f"results -> {output}")
    return record
