"""``pcctune compare``: B − A of two sets of training runs (over seeds), or of two models (a paired bootstrap over the
STS test pairs), for every task and the average, each with its 95 % interval and a verdict
(``pcctune.evaluation.compare``)."""

from __future__ import annotations

import glob
import math
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from pcctune.correlation import correlation
from pcctune.data.cache import senteval_folder
from pcctune.data.tasks import SHORT_NAMES
from pcctune.errors import PcctuneError
from pcctune.evaluation.compare import paired_bootstrap_mean, seed_difference
from pcctune.evaluation.interval import CONFIDENCE, RESAMPLES
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, load_protocol_tasks
from pcctune.evaluation.sts import task_cosines
from pcctune.evaluation.tables import Cell, ScoreTable
from pcctune.io import check_output_file
from pcctune.modeling.build import build_model
from pcctune.orchestration.push import model_folder
from pcctune.orchestration.report import result_files
from pcctune.orchestration.run_folder import RESULTS
from pcctune.provenance import library_versions
from pcctune.results import CompareResult, Difference, RunResult, Scores

Runs = str | Path | Sequence[str | Path]
"""One side's runs: paths or glob patterns (a string may hold several, comma-separated), each a run record
(``results.json`` or a copy of one), a run folder, or a folder of run records."""
AVERAGE = "avg"


def side_files(runs: Runs) -> list[Path]:
    """The run record files of one side, each once, in the order given (a glob's matches sorted)."""
    items = [runs] if isinstance(runs, str | Path) else list(runs)
    patterns = [
        part.strip()
        for item in items
        for part in (item.split(",") if isinstance(item, str) else [glob.escape(str(item))])
        if part.strip()
    ]
    if not patterns:
        raise PcctuneError("no runs given for a side: name run folders, result files or glob patterns")
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(str(Path(pattern).expanduser())))
        if not matches:
            raise PcctuneError(f"no run record or run folder matches {pattern}")
        files += [file for match in matches for file in result_files(Path(match)) if file not in files]
    return files


def last_stage(record: RunResult, file: Path) -> Scores:
    """The STS scores after a run's last stage (``before``, the untrained model's, never counts)."""
    stages = [name for name in record.sts_by_stage if name != "before"]
    if not stages:
        raise PcctuneError(f"{file}: the run has no STS scores after a trained stage")
    return record.sts_by_stage[stages[-1]]


def side_scores(files: Sequence[Path], side: str) -> dict[int, Scores]:
    """``{seed: the last stage's scores}`` of one side's runs; two runs of one seed on a side are an error."""
    scores: dict[int, Scores] = {}
    origin: dict[int, Path] = {}
    for file in files:
        record = RunResult.from_disk(file)
        if record.seed in scores:
            raise PcctuneError(
                f"{side}: two runs of seed {record.seed} ({origin[record.seed]}, {file}); give one run per seed"
            )
        scores[record.seed], origin[record.seed] = last_stage(record, file), file
    return scores


def shared_tasks(runs: Sequence[Scores], task: str | None) -> list[str]:
    """The tasks every run scored, in the first run's order; only ``task`` where one is named."""
    tasks = [name for name in runs[0] if all(name in scores for scores in runs)]
    if not tasks:
        raise PcctuneError("the runs of A and B share no STS task: nothing to compare")
    if task is None:
        return tasks
    if task not in tasks:
        raise PcctuneError(f"task {task!r} is not scored by every run; choose from {', '.join(tasks)}")
    return [task]


def compare_runs(runs_a: Runs, runs_b: Runs, task: str | None = None) -> CompareResult:
    """B − A of two sets of training runs, for every STS task both sides scored (or only ``task``, e.g.
    ``"STSBenchmark"`` or ``"avg"``), each score the one after a run's last stage.

    ``runs_a``, ``runs_b``: run folders, run records (``results.json``) or glob patterns, as a list or as one
    comma-separated string. Each difference has its 95 % interval over seeds, paired by seed where the two sides
    share at least 2 seeds, else Welch's (``pcctune.evaluation.compare.seed_difference``), and a verdict: a win or
    a loss for B only where the interval excludes 0, else a tie."""
    files_a, files_b = side_files(runs_a), side_files(runs_b)
    a, b = side_scores(files_a, "A"), side_scores(files_b, "B")
    tasks = shared_tasks([*a.values(), *b.values()], task)
    return CompareResult(
        a=[str(file) for file in files_a],
        b=[str(file) for file in files_b],
        seeds_a=sorted(a),
        seeds_b=sorted(b),
        mean_a={name: math.fsum(s[name] for s in a.values()) / len(a) for name in tasks},
        mean_b={name: math.fsum(s[name] for s in b.values()) / len(b) for name in tasks},
        differences={
            name: seed_difference({seed: s[name] for seed, s in a.items()}, {seed: s[name] for seed, s in b.items()})
            for name in tasks
        },
        versions=library_versions(),
    )


def model_source(spec: str | Path) -> str:
    """What to load for one side of a bootstrap: the final model of a run folder (or of its ``results.json``), or
    ``spec`` itself (a packaged short name, a model folder, a Hub id)."""
    path = Path(spec)
    if path.name == RESULTS and path.is_file():
        path = path.parent
    if path.is_dir() and (path / RESULTS).is_file():
        return str(model_folder(path))
    return str(spec)


def compare_models(
    model_a: str | Path,
    model_b: str | Path,
    data: str | Path | None = None,
    protocol: str = DEFAULT_PROTOCOL,
    task: str | None = None,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> CompareResult:
    """B − A of two models' Spearman × 100 on the seven STS test sets (or only ``task``) under ``protocol``, with the
    95 % interval of a paired bootstrap over the test pairs (``resamples`` draws seeded by ``seed``): the test set's
    noise, not the seeds'. With every task, ``avg`` too (each set resampled on its own;
    ``pcctune.evaluation.compare.paired_bootstrap_mean``). ``model_a``, ``model_b``: anything ``pcctune eval``
    loads, or a run folder (its last stage's final model)."""
    senteval = senteval_folder(data)
    tasks = load_protocol_tasks(senteval, protocol)
    if task is not None:
        names = [t.name for t in tasks]
        if task not in names:
            raise PcctuneError(f"unknown task {task!r}; choose from {', '.join(names)} (or none for all and avg)")
        tasks = [t for t in tasks if t.name == task]
    sources = [model_source(model_a), model_source(model_b)]
    cosines_a, cosines_b = (task_cosines(build_model(source), tasks, protocol) for source in sources)
    test_sets = [(gold, a, b) for (a, gold), (b, _) in zip(cosines_a, cosines_b, strict=True)]
    per_task, average = paired_bootstrap_mean(test_sets, "spearman", CONFIDENCE, resamples, seed)
    names = [t.name for t in tasks]
    scores_a = {name: correlation(a, gold).spearman * 100 for name, (gold, a, _) in zip(names, test_sets, strict=True)}
    scores_b = {name: correlation(b, gold).spearman * 100 for name, (gold, _, b) in zip(names, test_sets, strict=True)}
    differences = dict(zip(names, per_task, strict=True))
    if len(tasks) > 1:  # the seven tasks: their plain mean, as a run's avg
        for scores in (scores_a, scores_b):
            scores[AVERAGE] = math.fsum(scores.values()) / len(names)
        differences[AVERAGE] = average
    return CompareResult(
        a=sources[:1],
        b=sources[1:],
        mean_a=scores_a,
        mean_b=scores_b,
        differences=differences,
        protocol=protocol,
        data_dir=str(senteval),
        seed=seed,
        versions=library_versions(),
    )


def runs_cell(difference: Difference) -> str:
    """What stands behind an interval: the seeds paired, the runs of each side, or the test pairs."""
    if difference.method == "paired bootstrap":
        return f"{difference.n} pairs"
    if difference.method == "paired t":
        return f"{difference.n} paired seeds"
    return f"{difference.n_a} + {difference.n_b} runs"


def compare_table(result: CompareResult) -> ScoreTable:
    """One row per task: A, B, B − A with its interval, what stands behind it, the method and the verdict."""
    rows: dict[str, dict[str, Cell]] = {}
    for name, difference in result.differences.items():
        low, high = difference.low, difference.high
        rows[SHORT_NAMES.get(name, name)] = {
            "A": result.mean_a[name],
            "B": result.mean_b[name],
            "B − A": f"{difference.mean:+.2f}",
            f"{difference.confidence * 100:g} % interval": "—" if low is None else f"[{low:+.2f}, {high:+.2f}]",
            "n": runs_cell(difference),
            "method": difference.method,
            "verdict": difference.verdict,
        }
    return ScoreTable.from_rows(rows, title="B − A, Spearman × 100", first_column="task")


def side_line(name: str, sources: Sequence[str], seeds: Sequence[int]) -> str:
    """One side, in words: its model, or its runs and their seeds."""
    if not seeds:
        return f"{name}: {sources[0]}"
    runs = f"1 run (seed {seeds[0]})" if len(seeds) == 1 else f"{len(seeds)} runs (seeds {', '.join(map(str, seeds))})"
    return f"{name}: {runs}: {', '.join(sources)}"


def print_comparison(result: CompareResult, console: Console) -> None:
    """The two sides, the table and the headline difference (``avg``, else the one task) in plain words."""
    console.print(side_line("A", result.a, result.seeds_a), highlight=False, markup=False)
    console.print(side_line("B", result.b, result.seeds_b), highlight=False, markup=False)
    console.print(compare_table(result).to_rich())
    headline = AVERAGE if AVERAGE in result.differences else next(iter(result.differences))
    console.print(f"{headline}: {result.differences[headline].sentence()}", highlight=False, markup=False)


def run_compare(
    runs_a: str,
    runs_b: str,
    bootstrap: bool = False,
    data: Path | None = None,
    protocol: str | None = None,
    task: str | None = None,
    seed: int | None = None,
    resamples: int | None = None,
    output: Path | None = None,
    console: Console | None = None,
) -> CompareResult:
    """``pcctune compare``: ``compare_runs``, or with ``bootstrap`` ``compare_models`` (whose options
    ``data``, ``protocol``, ``seed`` and ``resamples`` are); print it and write it to ``output``."""
    console = console or Console()
    if output is not None:
        check_output_file(output)
    options = {"--data": data, "--protocol": protocol, "--seed": seed, "--resamples": resamples}
    if bootstrap:
        result = compare_models(
            runs_a,
            runs_b,
            data,
            protocol or DEFAULT_PROTOCOL,
            task,
            0 if seed is None else seed,
            resamples or RESAMPLES,
        )
    elif given := [flag for flag, value in options.items() if value is not None]:
        raise PcctuneError(f"{', '.join(given)}: options of --bootstrap (two models scored on the test pairs)")
    else:
        result = compare_runs(runs_a, runs_b, task)
    print_comparison(result, console)
    if output is not None:
        result.to_disk(output)
        console.print(f"comparison -> {output}", highlight=False, markup=False)
    return result
