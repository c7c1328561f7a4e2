"""The sides of ``pcctune compare``: a side's runs read from paths, globs and ``NAME=RUNS``; each run's final-stage
scores (the variant named, for runs trained with ``--compare``); the tasks every run scored; and a side in words."""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from pcctune.errors import PcctuneError, first_refusal
from pcctune.evaluation.tables import ScoreTable
from pcctune.orchestration.records import result_files
from pcctune.results import RunResult, ScoredModel, Scores
from pcctune.training.config import RunConfig

Runs = str | Path | Sequence[str | Path]
"""One side's runs: paths or glob patterns (a string may hold several, comma-separated), each a run record
(``results.json`` or a copy of one), a run folder, or a folder of run records."""
AVERAGE = "avg"
NAMED = re.compile(r"([A-Za-z][\w.+-]*)=(.+)")
"""A side given as ``NAME=RUNS`` (``cosent='runs/cosent-*'``): its name, then its runs."""


def named(runs: Runs, default: str | None = None) -> tuple[str, Runs]:
    """A side's name and its runs: ``NAME`` of ``NAME=RUNS``, else ``default``, else the runs as given."""
    if isinstance(runs, str) and (found := NAMED.fullmatch(runs)):
        return found[1], found[2]
    if default is not None:
        return default, runs
    return str(runs) if isinstance(runs, str | Path) else ",".join(map(str, runs)), runs


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


def run_config(record: RunResult, file: Path) -> RunConfig:
    """The config a run was trained with, as its record keeps it."""
    try:
        return RunConfig.model_validate(record.config)
    except ValidationError as error:
        where, message = first_refusal(error)
        raise PcctuneError(
            f"{file}: its config does not read as a run config ({where or 'config'}: {message}), so how the run "
            "scored its model is unknown; give its model folder instead to score it as pcctune eval does"
        ) from None


def final_variants(record: RunResult) -> list[str]:
    """The labels of a run's final stage (in ``sts_by_stage`` and its stage records): one, or one per loss of a run
    trained with ``--compare``. ``before`` and the earlier stages never count."""
    stages = record.config.get("stages")
    names = [stage.get("name") for stage in stages if isinstance(stage, dict)] if isinstance(stages, list) else []
    earlier = set(names[:-1])
    labels = dict.fromkeys([*record.sts_by_stage, *(stage.stage for stage in record.stages)])
    return [label for label in labels if label != "before" and label not in earlier]


def chosen_variant(record: RunResult, file: Path, variant: str | None) -> str:
    """The label of the final stage compared: the run's only one, or the variant named ``variant`` (its label, e.g.
    ``pcc-pearson``, or its loss, e.g. ``pearson``)."""
    labels = final_variants(record)
    if not labels:
        raise PcctuneError(f"{file}: the run has no trained stage to compare")
    if variant is None:
        if len(labels) > 1:
            raise PcctuneError(
                f"{file}: the run has {len(labels)} final-stage variants ({', '.join(labels)}); name the one to "
                "compare (--variant)"
            )
        return labels[0]
    losses = {stage.stage: stage.loss for stage in record.stages}
    matches = [label for label in labels if variant in (label, losses.get(label))]
    if len(matches) != 1:
        raise PcctuneError(f"{file}: no final-stage variant {variant!r}; its variants: {', '.join(labels)}")
    return matches[0]


def read_runs(files: Sequence[Path]) -> dict[Path, RunResult]:
    """Each run record of ``files``, read once: what ``side_scores`` and ``scored_alike`` check."""
    return {file: RunResult.from_disk(file) for file in files}


def side_scores(
    records: Mapping[Path, RunResult], side: str, variant: str | None = None
) -> tuple[dict[int, tuple[Path, Scores]], set[int]]:
    """``{seed: (run record, its final stage's scores)}`` of one side's runs (``variant``: the final stage of runs
    trained with ``--compare``), and the seeds whose compared stage was best at its last dev evaluation
    (``StageRecord.best_at_last_evaluation``: its dev score may still have been rising where the schedule stopped, so
    a difference against it may be the schedule's rather than the method's); two runs of one seed on a side are an
    error."""
    runs: dict[int, tuple[Path, Scores]] = {}
    rising: set[int] = set()
    for file, record in records.items():
        if record.seed in runs:
            raise PcctuneError(
                f"{side}: two runs of seed {record.seed} ({runs[record.seed][0]}, {file}); give one run per seed"
            )
        label = chosen_variant(record, file, variant)
        if label not in record.sts_by_stage:
            raise PcctuneError(f"{file}: the run has no STS scores after its stage {label}")
        runs[record.seed] = file, record.sts_by_stage[label]
        if any(stage.stage == label and stage.best_at_last_evaluation for stage in record.stages):
            rising.add(record.seed)
    return runs, rising


def scored_alike(records: Mapping[Path, RunResult], tasks: Sequence[str]) -> str:
    """The STS protocol every run of ``records`` was scored under (``RunResult.protocol``, ``docs/evaluation.md``), each
    of ``tasks`` (every task, where the average is one) on as many test pairs in every run that recorded its count
    (``pairs_by_task``); runs scored otherwise are refused, since their difference would mix the protocol (the same
    model scores differently under ``simcse-senteval`` and ``paper``) or the test pairs (a subsample, another copy of
    a set) with the method, or an average over different test sets (``check_averaged_tasks``)."""
    runs: dict[str, list[Path]] = {}
    for file, record in records.items():
        runs.setdefault(record.protocol, []).append(file)
    if len(runs) > 1:
        found = "; ".join(f"{protocol}: {len(kept)} of them, e.g. {kept[0]}" for protocol, kept in runs.items())
        raise PcctuneError(
            f"the runs compared were scored under different STS protocols ({found}): a difference would mix the "
            "protocol with the method; compare runs scored under one protocol"
        )
    check_test_pairs(records, None if AVERAGE in tasks else tasks)
    return next(iter(runs))


def check_averaged_tasks(records: Mapping[Path, RunResult]) -> None:
    """Refuse runs whose ``avg`` averages different test sets (a run's ``tasks``: ``STS12,my_test.csv`` against the
    seven; ``pairs_by_task`` names them, a record before schema 3 none, taken as it is), naming two such runs."""
    first: tuple[list[str], Path] | None = None
    for file, record in records.items():
        scored = sorted(record.pairs_by_task)
        if not scored:
            continue
        if first is None:
            first = scored, file
        elif scored != first[0]:
            raise PcctuneError(
                f"the runs compared average different test sets ({', '.join(first[0])} in {first[1]}; "
                f"{', '.join(scored)} in {file}): a difference of avg would mix the test sets with the method; compare "
                "one task they share (--task) or runs scored on the same tasks"
            )


def check_test_pairs(records: Mapping[Path, RunResult], tasks: Sequence[str] | None) -> None:
    """Refuse runs that scored a task of ``tasks`` (None: any, as the average counts every task, whose runs must then
    have averaged the same test sets: ``check_averaged_tasks``) on different numbers of test pairs (``pairs_by_task``;
    a record before schema 3 names none and is taken as it is), naming the first such task and two runs."""
    if tasks is None:
        check_averaged_tasks(records)
    seen: dict[str, tuple[int, Path]] = {}
    for file, record in records.items():
        for task, pairs in record.pairs_by_task.items():
            if tasks is not None and task not in tasks:
                continue
            first = seen.setdefault(task, (pairs, file))
            if first[0] != pairs:
                raise PcctuneError(
                    f"the runs compared scored {task} on other test pairs ({first[0]} pairs in {first[1]}, {pairs} in "
                    f"{file}): a difference would mix the test sets with the method; compare runs scored on the same"
                )


def shared_tasks(runs: Mapping[Path, Scores], task: str | None) -> list[str]:
    """The tasks every run (its record file and its scores) scored, in the first run's order; only ``task`` where
    one is named, an error naming the runs that did not score it."""
    scores = list(runs.values())
    tasks = [name for name in scores[0] if all(name in run for run in scores)]
    if not tasks:
        raise PcctuneError("the runs compared share no STS task: nothing to compare")
    if task is None:
        return tasks
    if task not in tasks:
        missing = [str(file) for file, run in runs.items() if task not in run]
        which = "no run" if len(missing) == len(runs) else ", ".join(missing)
        raise PcctuneError(f"{which} scored {task!r}: name a task every run scored (--task): {', '.join(tasks)}")
    return [task]


def print_section(console: Console, table: ScoreTable, lines: Sequence[str], after: Sequence[str]) -> None:
    """A comparison on the console: ``lines`` (paths whole, unwrapped, so they can be copied), ``table``, then
    ``after``; the same parts ``markdown_section`` writes."""
    for line in lines:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    console.print(table.to_rich())
    for line in after:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def markdown_section(table: ScoreTable, source: str, lines: Sequence[str], after: Sequence[str]) -> list[str]:
    """A comparison as markdown lines (``pcctune report``): a heading of ``table``'s title and ``source`` (its
    record's file), ``lines`` as bullets, the table, then ``after``."""
    sides = [f"- {line}" for line in lines]
    return [f"## {table.title} ({source})", "", *sides, "", table.to_markdown(), "", *after, ""]


def side_line(name: str, sources: Sequence[str], seeds: Sequence[int], variant: str | None = None) -> str:
    """One side, in words: its model, or its runs and their seeds (and the final-stage variant compared)."""
    if variant is not None:
        name = f"{name} (variant {variant})"
    if not seeds:
        return f"{name}: {sources[0]}"
    runs = f"1 run (seed {seeds[0]})" if len(seeds) == 1 else f"{len(seeds)} runs (seeds {', '.join(map(str, seeds))})"
    return f"{name}: {runs}: {', '.join(sources)}"


def model_line(name: str, model: ScoredModel | None) -> str | None:
    """How one side's model was scored (a bootstrap): its prompt, dtype and quantization, in one line; None for a
    side of runs."""
    if model is None:
        return None
    prompt = f"the prompt {json.dumps(model.prompt, ensure_ascii=False)}" if model.prompt else "no prompt"
    precision = model.dtype if model.quantization == "none" else f"{model.quantization}, the rest in {model.dtype}"
    return f"{name}'s model scored with {prompt}, in {precision}"


def protocol_line(protocol: str | None) -> str | None:
    """The STS protocol every score of a comparison was scored under, in one line; None for a record from before
    runs' comparisons kept it."""
    return None if protocol is None else f"every score scored under the {protocol} protocol"


def rising_line(name: str, rising: Sequence[str], compared: int, difference: str = "B − A") -> str | None:
    """How many of a side's ``compared`` runs were best at their last dev evaluation, in one line; None where none
    was."""
    if not rising:
        return None
    reading = (
        "most of its runs may still have been improving where their schedule stopped"
        if 2 * len(rising) > compared
        else "their dev score may still have been rising there"
    )
    return (
        f"{name}: {len(rising)} of {compared} runs best at their last dev evaluation ({', '.join(rising)}); "
        f"{reading}: a longer schedule may change {difference}"
    )
