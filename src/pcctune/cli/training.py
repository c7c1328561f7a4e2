"""The commands that train: ``train`` (a run config's stages) and ``sweep`` (a search of its hyperparameters)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from pcctune.cli.app import DataOption, app, console, interrupt_says
from pcctune.errors import PcctuneError

OVERRIDE_FLAGS = {"output_dir": "--output-dir", "data_dir": "--data", "tasks": "--tasks"}
"""The config keys ``pcctune train`` also takes as options of their own: an error names the option given."""


def _train_config(
    config: Path, set_: list[str] | None, output_dir: str | None, data: Path | None, tasks: str | None
) -> Any:
    """``pcctune train``'s run config: the file with ``--set`` and the options that override its keys (an error
    names the option given)."""
    from pcctune.orchestration.library import load_config

    if tasks is not None and not tasks.replace(",", "").strip():
        raise PcctuneError("--tasks names no test set; give none for no test evaluation, sts for the seven")
    overrides = _overrides(set_, output_dir, data) | ({"tasks": tasks} if tasks is not None else {})
    given = {"output_dir": output_dir, "data_dir": data, "tasks": tasks}
    return load_config(config, overrides, flags={key: OVERRIDE_FLAGS[key] for key in given if given[key] is not None})


def _overrides(set_: list[str] | None, output_dir: str | None, data: Path | None) -> dict[str, Any]:
    from pcctune.yaml_input import read_yaml_value

    overrides: dict[str, Any] = {}
    for item in set_ or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PcctuneError(f"--set expects key=value, got {item!r}")
        overrides[key] = read_yaml_value(value, f"--set {key}")
    if output_dir is not None:
        if not output_dir.strip():
            raise PcctuneError("--output-dir is empty; name the run's folder")
        overrides["output_dir"] = output_dir
    if data:
        overrides["data_dir"] = str(data)
    return overrides


def _resume_command() -> str:
    args = [arg for arg in sys.argv[1:] if arg not in ("--resume", "--overwrite")]
    return shlex.join(["pcctune", *args, "--resume"])


CheckOption = Annotated[
    bool,
    typer.Option(
        help="check the run and print what each stage will train (examples, steps, dev evaluations); "
        "train nothing, write nothing, load no weights"
    ),
]


@app.command("train")
def train_command(
    config: Annotated[Path, typer.Argument(help="YAML run config (see configs/)")],
    resume: Annotated[bool, typer.Option(help="continue the run in output_dir (same settings)")] = False,
    overwrite: Annotated[bool, typer.Option(help="replace the run in output_dir")] = False,
    resume_from: Annotated[
        Path | None, typer.Option(help="continue from this checkpoint (any step of any stage)")
    ] = None,
    compare: Annotated[
        str | None, typer.Option(help="rerun the last stage with each loss, e.g. pearson,infonce_positives")
    ] = None,
    output_dir: Annotated[str | None, typer.Option(help="override output_dir")] = None,
    data: DataOption = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a config key: stages.0.epochs=2")] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            help="what the test evaluations score: sts (the seven STS test sets), none (no test evaluation), or a "
            "comma-separated list of STS task names and your own test pair files (.csv/.tsv/.jsonl) or Hub dataset "
            "ids; default: the config's tasks"
        ),
    ] = None,
    check: CheckOption = False,
) -> None:
    """Run the stages of CONFIG (stage 1 contrastive, stage 2 Pearson), evaluating after each."""
    from pcctune.distributed import finish
    from pcctune.orchestration.pipeline import run_pipeline

    if resume and overwrite:
        raise PcctuneError("--resume continues a run and --overwrite replaces it; pass one of them")
    losses = [loss.strip() for loss in compare.split(",")] if compare else None
    run = _train_config(config, set_, output_dir, data, tasks)
    if check:
        from pcctune.orchestration.run_plan import check_run

        check_run(run, losses, resume, overwrite, str(resume_from) if resume_from else None, console)
        return
    with interrupt_says(f"interrupted; checkpoints are kept in {run.output_dir}; continue with: {_resume_command()}"):
        run_pipeline(
            run,
            resume=resume,
            compare=losses,
            console=console,
            overwrite=overwrite,
            resume_from=str(resume_from) if resume_from else None,
        )
        finish()


@app.command("sweep")
def sweep_command(
    config: Annotated[Path, typer.Argument(help="YAML run config whose values the search changes")],
    space: Annotated[Path, typer.Option(help="YAML search space: dotted config keys → distributions")],
    output: Annotated[Path, typer.Option(help="sweep folder (study, trials, winner, seeds); rerun to continue")],
    trials: Annotated[int, typer.Option(min=1, help="finished (or pruned) trials to search")] = 20,
    seeds: Annotated[int, typer.Option(min=1, help="seeds the winner is trained and scored with")] = 3,
    prune_after: Annotated[
        int, typer.Option(min=0, help="training steps before the median pruner may stop a trial (slow starters)")
    ] = 0,
    data: DataOption = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="fixed override for every run: stages.0.epochs=2")
    ] = None,
    grow: Annotated[
        bool,
        typer.Option(
            help="also train the winner at 2× and 4× its last stage's schedule and at 4× with half its learning rate "
            "(8× where a 4× leads) and choose again on dev: the same growth for every sweep, so methods compared "
            "through their sweeps are not stopped early"
        ),
    ] = False,
) -> None:
    """Search CONFIG's hyperparameters on dev data (optuna), then score the winner on the test sets over seeds."""
    from pcctune.orchestration.sweep import run_sweep

    again = shlex.join(["pcctune", *sys.argv[1:]])
    with interrupt_says(f"interrupted; finished trials are kept in {output}; continue with: {again}"):
        run_sweep(config, space, trials, seeds, output, _overrides(set_, None, data), console, prune_after, grow)
