"""What the reproduction scripts share, on top of the script pattern of ``benchmarks/_common.py``.

A claim's script lives in its folder (``reproductions/<claim>/<claim>.py``) and writes its record
(``runs.json``), table and plot there; a trained run's own record is kept under ``records/`` and is never trained
again (:func:`trained_runs`, :func:`train_once`), and a claim made of ``pcctune`` commands runs only the
:class:`Step` whose record is missing (:func:`run_steps`). A grid of runs that its own records decide (a seed run
once its search has run) runs them one at a time or several at once (:func:`run_jobs`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._common import (
    ROOT,
    STS_COLUMNS,
    Benchmark,
    Measured,
    Rows,
    rows_of,
    run,
    save_rows,
    to_record,
)

from pcctune.data.download import EXPECTED
from pcctune.results import AnyResult, BenchmarkResult, EvalResult, RunResult, load_result
from reproductions._core_share import equal_share, follow, job_callbacks

if TYPE_CHECKING:
    from pcctune.host_settings import HostSettings
    from pcctune.training.config import RunConfig

__all__ = [
    "ROOT",
    "STS_COLUMNS",
    "Benchmark",
    "Measured",
    "Rows",
    "Step",
    "budget",
    "claim",
    "kept",
    "load_rows",
    "overrides",
    "pair_counts",
    "pcctune",
    "record_row",
    "rows_of",
    "run",
    "run_jobs",
    "run_steps",
    "save_rows",
    "stage2_config",
    "sts_scores",
    "sts_table",
    "to_record",
    "train_once",
    "trained_runs",
]


TEST_SETS = {**{f"STS{year}": f"STS{year}" for year in range(12, 17)}}
TEST_SETS |= {"STSBenchmark": "STSBenchmark:test", "SICKRelatedness": "SICK:test"}
"""Each of the seven STS tasks → its test set's name in the SentEval release's known counts and hashes."""


def claim(module_name: str, **settings: Any) -> Benchmark:
    """The :class:`Benchmark` of a claim's script: its output is the claim's folder, where its records live."""
    folder = Path(str(sys.modules[module_name].__file__)).resolve().parent
    return Benchmark.of(module_name, output=str(folder.relative_to(ROOT)), **settings)


def sts_scores(model, tasks, dtype: str) -> dict[str, float]:
    """The seven STS numbers + avg of ``model``, encoded in ``dtype`` (``fp32`` or ``bf16``)."""
    import torch

    from pcctune.evaluation.sts import evaluate_sts

    if dtype == "bf16":
        model.to(torch.bfloat16)
    per_task, avg = evaluate_sts(model, tasks, show_progress=False)
    return {s.name: s.spearman for s in per_task} | {"avg": avg}


def pair_counts(record: AnyResult) -> dict[str, int]:
    """The pairs each STS task of ``record`` was scored on: recorded (eval records, and run records of schema 3),
    or, for a run record written before runs kept them, the full test sets' known sizes (a run always scores the
    full sets)."""
    if isinstance(record, EvalResult) and record.sts_detail:
        return {task.name: task.n for task in record.sts_detail}
    if isinstance(record, RunResult):
        return record.pairs_by_task or {task: EXPECTED[TEST_SETS[task]][0] for task in STS_COLUMNS[:-1]}
    return {}


def stage2_config(args: argparse.Namespace, loss: str, lr: float, **settings: Any):
    """A stage-2 run on the filtered stage-2 set with the script's budget flags (``batch_size``, ``epochs``,
    ``max_steps``, ``max_seq_length``, ``eval_steps``), 10 % warm-up, checkpoints picked on SICK trial; ``settings``
    override or add any stage field."""
    from pcctune.training.config import StageConfig

    flags = vars(args)
    stage = {"name": loss, "loss": loss, "data": {"source": "stage2"}, "learning_rate": lr, "warmup_ratio": 0.1}
    stage |= {"epochs": args.epochs, "max_steps": args.max_steps or -1, "max_seq_length": args.max_seq_length}
    stage |= {"dev": "sick-trial", **({"batch_size": flags["batch_size"]} if "batch_size" in flags else {})}
    if "eval_steps" in flags:
        stage |= {"eval_steps": args.eval_steps, "logging_steps": args.eval_steps}
    return StageConfig.model_validate(stage | settings)


def budget(args: argparse.Namespace) -> str:
    """The training budget in words: ``N steps`` or ``E epoch(s)``."""
    return f"{args.max_steps} steps" if args.max_steps else f"{args.epochs:g} epoch(s)"


def trained_runs(
    seeds: list[int], variants: list[Any], config_of: Callable[[Any, int], Any], output: Path
) -> Iterator[tuple[int, Any, Any, Any]]:
    """Each (seed, variant)'s ``RunConfig`` and ``RunResult``, trained by pcctune's pipeline and resumed when its
    folder already holds the run.

    Each finished run's record is kept beside the claim's record (``OUTPUT/records/NAME.json``, NAME its run
    folder's), and a run whose kept record was made under the same run-defining settings is not trained again:
    the run folders are scratch, the records are committed."""
    from pcctune.orchestration.library import train
    from pcctune.orchestration.run_folder import holds_a_run
    from pcctune.training.config import RunConfig, config_fingerprint

    for seed in seeds:
        for variant in variants:
            config = config_of(variant, seed)
            kept = output / "records" / f"{Path(config.output_dir).name}.json"
            result = RunResult.from_disk(kept) if kept.is_file() else None
            if result is None or config_fingerprint(RunConfig.model_validate(result.config)) != config_fingerprint(
                config
            ):
                result = train(config, resume=holds_a_run(Path(config.output_dir)))
                result.to_disk(kept)
            yield seed, variant, config, result


def kept(path: Path) -> RunResult | None:
    """The run record kept at ``path``, if there is one."""
    return RunResult.from_disk(path) if path.is_file() else None


def train_once(
    config: RunConfig,
    record: Path,
    score: bool,
    noted: dict[str, str] | None = None,
    before_keeping: Callable[[], None] | None = None,
) -> RunResult:
    """Train ``config`` unless ``record`` holds it (resuming its folder when a killed run left one) and keep its
    record there, with ``noted`` added to its ``versions`` (what else decided it, e.g. the build of the model it
    continued) once ``before_keeping`` (a check that raises) has passed; a search trial (``score`` false) reads no
    test set. Once the record is kept, the run's checkpoints go (they only serve a resume; its final model stays): a
    grid of small runs otherwise fills the disk."""
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.orchestration.run_folder import holds_a_run
    from pcctune.orchestration.sweep import drop_checkpoints

    done = kept(record)
    if done is not None:
        return done
    resume = holds_a_run(Path(config.output_dir))
    result = run_pipeline(config, resume=resume, tasks=None if score else [], callbacks=job_callbacks())
    if noted:
        result = result.model_copy(update={"versions": result.versions | noted})
    if before_keeping is not None:
        before_keeping()
    result.to_disk(record)
    drop_checkpoints(Path(config.output_dir))
    return result


Job = tuple[Any, ...]
"""A job of :func:`run_jobs`: its name, a function (importable: a parallel job runs in a fresh process) and the
function's arguments."""


def run_jobs(
    ready: Callable[[], Iterable[Job]],
    jobs: int,
    max_runs: int | None = None,
    after: Callable[[], None] | None = None,
    counted: Callable[[str], bool] = lambda name: True,
) -> None:
    """Run the jobs ``ready()`` names until it names none, asking it again after each job: the records a job leaves
    decide what is ready next (a seed run once its search has run). One at a time in this process, or with ``jobs``
    above 1 up to that many at once, each in a fresh process with an equal share of the CPU's cores (its training
    steps: of the jobs running at the time, ``reproductions._core_share``) and the CPU speed settings in force
    here (a machine with a GPU and many cores; on two cores, measured against one run at a time in
    benchmarks/results/speed/README.md, section 14), each started as soon as it is ready. At most
    ``max_runs`` jobs that ``counted`` counts; ``after`` runs after each job (a table rewritten from the records).

    A job that fails is reported and not started again in this command, and the others go on (an unattended grid
    would otherwise stop at its first failure, and a restart stop at the same job again); the command then ends
    with the failed jobs named and a non-zero exit, their run folders kept for a rerun to resume."""
    queue = JobQueue(ready, max_runs, after, counted)
    if jobs <= 1:
        _run_serially(queue)
    else:
        _run_in_parallel(queue, jobs)
    if queue.failed:
        listed = "; ".join(f"{name}: {why}" for name, why in queue.failed.items())
        raise SystemExit(f"{len(queue.failed)} job(s) failed (the others ran): {listed}")


@dataclass
class JobQueue:
    """What :func:`run_jobs` works through: the ready jobs, the budget, what follows each job, and what it has
    done and failed so far."""

    ready: Callable[[], Iterable[Job]]
    max_runs: int | None
    after: Callable[[], None] | None
    counted: Callable[[str], bool]
    failed: dict[str, str] = field(default_factory=dict)
    done: int = 0

    def room(self, jobs: int) -> int:
        """How many jobs may run at once now: ``jobs``, less what the budget has left."""
        return jobs if self.max_runs is None else min(jobs, self.max_runs - self.done)

    def succeeded(self, name: str) -> None:
        self.done += self.counted(name)
        if self.after is not None:
            self.after()

    def fail(self, name: str, error: BaseException) -> None:
        why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        self.failed[name] = f"{type(error).__name__}: {why}"
        print(f"[failed] {name}: {self.failed[name]}", flush=True)


def _run_serially(queue: JobQueue) -> None:
    while queue.room(1) > 0:
        job = next((job for job in queue.ready() if job[0] not in queue.failed), None)
        if job is None:
            return
        name, function, *arguments = job
        print(f"[{queue.done + 1}] {name}", flush=True)
        try:
            function(*arguments)
        except (Exception, SystemExit) as error:  # one job's failure, a refusal too: reported, the others go on
            queue.fail(name, error)
            continue
        queue.succeeded(name)


def _run_in_parallel(queue: JobQueue, jobs: int) -> None:
    """Up to ``jobs`` at once in worker processes; a pool broken by a worker that died (killed for memory, say)
    fails the jobs it held and a fresh pool takes the rest."""
    from concurrent.futures.process import BrokenProcessPool

    while True:
        try:
            _pool_round(queue, jobs)
            return
        except BrokenProcessPool:
            print("[pool] a worker process died; a fresh pool takes the jobs left", flush=True)


def _pool_round(queue: JobQueue, jobs: int) -> None:
    import multiprocessing
    import os
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    cores = os.cpu_count() or 1
    running: dict[str, Future[Any]] = {}
    refusal: SystemExit | None = None
    context = multiprocessing.get_context("spawn")
    share = context.RawValue("i", cores)  # a training step's threads: the cores over the jobs running now
    cap = equal_share(cores, jobs)
    with ProcessPoolExecutor(jobs, context, follow, (share, cap), max_tasks_per_child=1) as pool:
        while True:
            starting: list[Job] = []
            if refusal is None:
                starting, refusal = _next_jobs(queue, running, queue.room(jobs))
            share.value = equal_share(cores, len(running) + len(starting))
            _submit(pool, running, starting)
            if not running:
                if refusal is not None:
                    raise refusal
                return
            finished, _ = wait(running.values(), return_when=FIRST_COMPLETED)
            for name in [name for name, future in running.items() if future in finished]:
                error = running.pop(name).exception()
                if error is not None:
                    queue.fail(name, error)
                    continue
                print(f"[done] {name}", flush=True)
                queue.succeeded(name)


def _next_jobs(queue: JobQueue, running: dict[str, Any], limit: int) -> tuple[list[Job], SystemExit | None]:
    """The ready jobs not running or failed to start now, up to ``limit`` running; a refusal of the plan
    (``SystemExit`` from ``ready``) is said now and returned with them, to be raised once the running jobs end."""
    starting: list[Job] = []
    try:
        for job in queue.ready():
            if len(running) + len(starting) >= limit:
                break
            if job[0] not in running and job[0] not in queue.failed and job[0] not in (j[0] for j in starting):
                starting.append(job)
    except SystemExit as refusal:
        print(f"[refused] {refusal}", flush=True)
        return starting, refusal
    return starting, None


def _submit(pool: Any, running: dict[str, Any], starting: list[Job]) -> None:
    """Start ``starting`` in ``pool``, each under this process's CPU speed settings."""
    from pcctune.host_settings import host_settings

    settings = host_settings()
    for name, function, *arguments in starting:
        print(f"[start] {name}", flush=True)
        running[name] = pool.submit(in_settings, settings, function, *arguments)


def in_settings(settings: HostSettings, function: Callable[..., Any], *arguments: Any) -> Any:
    """``function(*arguments)`` under the CPU speed settings ``settings`` (``pcctune.host_settings``): a spawned
    job's process starts with none of its parent's, which hold in the parent's context only."""
    from pcctune.host_settings import using

    with using(settings):
        return function(*arguments)


def load_rows(path: Path) -> tuple[Rows, BenchmarkResult | None]:
    """A script's saved rows as dicts and its record; nothing if the file is absent."""
    if not path.is_file():
        return [], None
    record = BenchmarkResult.from_disk(path)
    return rows_of(record), record


@dataclass(frozen=True)
class Step:
    """``pcctune`` commands whose record is kept as ``records/NAME.json``: they run only while it is missing.

    In the commands, ``{record}`` is that record's path, ``{runs}`` the scratch folder for run folders and
    ``{folder}`` the claim's folder. A ``train`` command trains into ``{runs}/NAME`` (resumed when it holds the
    run) and its ``results.json`` becomes the record."""

    name: str
    commands: tuple[tuple[str, ...], ...]


def pcctune(argv: Sequence[str]) -> None:
    """Run one ``pcctune`` command in this process (as the CLI would, but without a new interpreter's start-up)."""
    from pcctune.cli import app

    print("$ pcctune " + " ".join(argv), flush=True)
    app(args=list(argv), prog_name="pcctune", standalone_mode=False)


def run_steps(steps: Sequence[Step], folder: Path, runs: Path, data: str | None) -> dict[str, AnyResult]:
    """Run each step whose record is missing under ``folder/records`` and return every step's record by name
    (a step's record may also be another JSON file, e.g. a bound's numbers: read it yourself): the committed
    records say what is done, so an interrupted claim continues where it stopped."""
    records, data_flag = folder / "records", ["--data", str(data)] if data else []
    for step in steps:
        record = records / f"{step.name}.json"
        if record.is_file():
            continue
        values = {"record": str(record), "runs": str(runs), "folder": str(folder)}
        for command in step.commands:
            argv = [part.format(**values) for part in command] + data_flag
            if argv[0] == "train":
                run_dir = runs / step.name
                resume = ["--resume"] if (run_dir / "run.json").is_file() else []
                pcctune([*argv, "--set", f"output_dir={run_dir}", *resume])
                load_result(run_dir / "results.json").to_disk(record)
            else:
                pcctune(argv)
    return {step.name: load_result(records / f"{step.name}.json") for step in steps}


def overrides(settings: Sequence[str]) -> tuple[str, ...]:
    """``--set KEY=VALUE`` for each setting (what ``--quick`` adds to a claim's ``train`` commands)."""
    return tuple(part for setting in settings for part in ("--set", setting))


def record_row(label: str, name: str, record: AnyResult, stage: str | None = None) -> dict[str, Any]:
    """A table row of one record (a run's ``stage``, or an evaluation): its scores and the pairs they rest on."""
    if isinstance(record, RunResult):
        scores = record.sts_by_stage[stage or next(iter(record.sts_by_stage))]
    else:
        assert isinstance(record, EvalResult) and record.sts is not None, f"{name}: no STS scores"
        scores = record.sts
    recorded = not isinstance(record, RunResult) or bool(record.pairs_by_task)
    return {"row": label, "record": name, "stage": stage, "sts": scores, "pairs": pair_counts(record)} | (
        {} if recorded else {"pairs_from": KNOWN_SIZES}
    )


def sts_table(rows: Rows, details: dict[str, Any] | None = None) -> str:
    """Rows of :func:`record_row` as markdown: the seven tasks, their average and the pairs scored."""
    header = ["row", *STS_COLUMNS, "pairs"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    notes = list(dict.fromkeys(row["pairs_from"] for row in rows if "pairs_from" in row))
    for row in rows:
        cells = [f"{row['sts'][column]:.2f}" for column in STS_COLUMNS]
        mark = "*" * (notes.index(row["pairs_from"]) + 1) if "pairs_from" in row else ""
        lines.append(f"| {row['row']} | " + " | ".join(cells) + f" | {sum(row['pairs'].values()):,}{mark} |")
    lines += [""] * bool(notes) + [f"{'*' * (i + 1)} pairs not in the record: {note}." for i, note in enumerate(notes)]
    return "\n".join(lines)


KNOWN_SIZES = (
    "a run record written before records kept their pair counts; a run scores the full test sets, whose sizes "
    "are the SentEval release's (pcctune.data.download.EXPECTED)"
)
