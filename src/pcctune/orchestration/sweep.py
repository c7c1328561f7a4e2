"""``pcctune sweep``: search a run's hyperparameters on dev data, then score the winner over several seeds.

1. **Search** (optuna's TPE sampler, median pruning, a SQLite study in ``OUTPUT/study.db``): each
   trial is an ordinary run folder (``OUTPUT/trials/trial-NNN``) of CONFIG with the trial's values
   set by dotted keys (as ``--set``). Its objective is the last stage's best dev score; the dev
   evaluations during training are reported to the pruner. Trials read **no test set**: they run
   with ``tasks=[]``, so the seven STS test sets are never loaded before the winner is fixed (the
   leakage filter reads the test pairs only to remove them from the training and dev data).
2. **Winner**: the best trial's full config is written to ``OUTPUT/best_config.yaml``, ready to train; with
   ``--grow``, after the winner has also trained at longer schedules (``OUTPUT/grown/xF``) and been chosen again
   on dev.
3. **Seeds**: the winner runs once per seed (``OUTPUT/seeds/seed-S``) with the test evaluation, and
   the seven tasks + avg are summarised as mean ± std (``OUTPUT/summary.md``, ``OUTPUT/sweep.json``).
4. **Where the winner sits**: each searched value at an edge of its space, and how many seed runs were best at
   their last dev evaluation; a warning where either says the space may hold the winner back. ``OUTPUT/space.png``
   draws every finished trial's dev score against each searched value.

Interrupted anywhere, the same command continues: finished trials are in the study, a trial that
was running when the process died is marked failed and replaced, and finished seed runs are kept. The study
keeps the identity of its sweep (config with overrides, space, pruning, its data files' content, the code and library
versions that run a trial): an output folder holding another sweep is refused, so no trial of it counts as this one's.

The search space (``pcctune.orchestration.search_space``) is a YAML mapping of dotted keys to distributions:

    stages.0.learning_rate: {type: float, low: 1.0e-6, high: 1.0e-4, log: true}
    stages.0.epochs: {type: categorical, choices: [1, 2, 3]}
    stages.0.data.rescale_sick: {type: categorical, choices: [false, true]}
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from transformers import TrainerCallback
from typing_extensions import override

from pcctune.data.cache import senteval_folder
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError
from pcctune.io import check_output_folder, write_text
from pcctune.orchestration.growth import (
    FIRST_GROWTH,
    SEARCHED,
    Growth,
    Multiple,
    leading,
    parse,
)
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.orchestration.run_folder import holds_a_run, is_run_of
from pcctune.orchestration.search_space import Distribution, load_space, plot_space, space_values, suggest
from pcctune.orchestration.sweep_summary import summarise, write_summary
from pcctune.provenance import code_digest, file_sha256, library_versions
from pcctune.results import BenchmarkResult, RunResult
from pcctune.training.checkpoints import CHECKPOINTS
from pcctune.training.config import RunConfig, config_fingerprint, dump_config, load_config
from pcctune.training.dev import dev_metric, stage_data_files, stage_dev_parts
from pcctune.training.health import NonFiniteTraining

BEST_CONFIG = "best_config.yaml"
"""The winner's full config in the sweep's folder, ready to train."""
SPACE_PLOT = "space.png"
"""Each finished trial's dev score against each searched value, the winner starred (``search_space.plot_space``)."""


def finished_trials(study: Any) -> list[Any]:
    """The trials that count towards a sweep's number: complete or pruned (a failed or killed one is asked again)."""
    import optuna

    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED))


def complete_trials(study: Any) -> list[tuple[dict[str, Any], float]]:
    """``(params, dev score)`` of every trial that ran to its end (not the pruned ones: their score is mid-run)."""
    import optuna

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    return [(trial.params, trial.value) for trial in complete]


class ReportToPruner(TrainerCallback):
    """Reports each dev evaluation of the last stage (the one the objective reads) to the optuna trial and stops a
    trial the pruner gives up on. An earlier stage's evaluations are not reported: its steps count from 0 again, and
    optuna keeps the first value reported at a step, so the pruner would judge the trial by the earlier stage."""

    def __init__(self, trial: Any, metric: str, stages: int) -> None:
        self.trial = trial
        self.metric = metric
        self.stages_left = stages

    @override
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.stages_left -= 1

    @override
    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: dict[str, float] | None = None, **kwargs: Any
    ) -> None:
        import optuna

        if metrics and self.metric in metrics and self.stages_left == 0:
            self.trial.report(metrics[self.metric], state.global_step)
            if self.trial.should_prune():
                raise optuna.TrialPruned()


class Sweep:
    """One sweep folder: the study, the trials, the winner and its seeds."""

    def __init__(
        self,
        config_path: Path,
        space: dict[str, Distribution],
        output: Path,
        overrides: dict[str, Any],
        console: Console,
        prune_after: int,
    ) -> None:
        self.config_path, self.space, self.output = config_path, space, output
        self.overrides, self.console, self.prune_after = overrides, console, prune_after
        base = load_config(config_path, overrides)
        for key, value in space_values(space):  # before the study exists: a bad space leaves no folder behind
            load_config(config_path, {**overrides, key: value}, given_as="search space")
        self.metric = dev_metric(base.stages[-1].dev)
        if self.metric is None:
            raise PcctuneError("a sweep selects on dev data: give the last stage a dev set (not none)")
        senteval = senteval_folder(base.data_dir)
        stage_dev_parts(base.stages[-1], senteval)  # a dev set too small fails here, not later
        self.identity = sweep_identity(base, space, prune_after, senteval)
        self.seed = base.seed

    def config(self, values: dict[str, Any], output_dir: Path, **extra: Any) -> RunConfig:
        """The sweep's base config with its overrides, ``values`` and ``extra``, its run folder ``output_dir``."""
        overrides = {**self.overrides, **values, "output_dir": str(output_dir), **extra}
        return load_config(self.config_path, overrides)

    def study(self) -> Any:
        """The Optuna study in ``OUTPUT/study.db``, new or resumed: refused where its finished trials are another
        sweep's, trials a dead process left running marked failed, the sampler seeded past the trials so far."""
        import optuna

        self.output.mkdir(parents=True, exist_ok=True)
        study = optuna.create_study(
            study_name="pcctune",
            storage=f"sqlite:///{self.output / 'study.db'}",
            load_if_exists=True,
            direction="maximize",
            sampler=optuna.samplers.TPESampler(seed=self.seed),
            pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=self.prune_after),
        )
        saved = study.user_attrs.get("sweep")
        finished = finished_trials(study)
        if saved is None and finished:
            raise PcctuneError(
                f"{self.output} holds a sweep from a pcctune that did not record what defined it, so its trials "
                "cannot be checked against this one's: give another --output"
            )
        if saved not in (None, self.identity) and finished:
            raise PcctuneError(
                f"{self.output} holds a sweep of another config, search space, data, pcctune code or library "
                "version; its trials would count as this one's: give another --output"
            )
        study.set_user_attr("sweep", self.identity)  # a study no trial finished in is this sweep's from now on
        for stale in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            study.tell(stale.number, state=optuna.trial.TrialState.FAIL)  # died with the last process
        # A sampler seeded alike in every process draws its first, random trials again from the start: a resumed
        # sweep repeated the points it had run. Seeded past the trials so far, it goes on (a fresh sweep: the seed).
        study.sampler = optuna.samplers.TPESampler(seed=self.seed + len(study.trials))
        return study

    def search(self, trials: int) -> Any:
        """Trials until ``trials`` have finished (complete or pruned; a failed one is asked again), each a run in its
        own folder, pruned by the median rule on its dev score, failed where training diverged; each trial's
        checkpoints dropped once its score is told. Returns the study."""
        import optuna

        study = self.study()
        while len(finished_trials(study)) < trials:
            trial = study.ask()
            values = suggest(trial, self.space)
            config = self.config(
                values,
                self.output / "trials" / f"trial-{trial.number:03d}",
                evaluate_before=False,
                evaluate_after_each_stage=False,
            )
            reporter = ReportToPruner(trial, str(self.metric), len(config.stages))
            try:
                record = run_pipeline(config, tasks=[], callbacks=[reporter], console=self.console)
            except optuna.TrialPruned:
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                self.console.print(f"trial {trial.number}: pruned")
                continue
            except NonFiniteTraining as error:  # one diverged setting fails its trial, not the sweep
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                self.console.print(f"trial {trial.number}: failed ({error})")
                continue
            value = record.stages[-1].best_dev_spearman if record.stages else None
            if value is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                continue
            study.tell(trial, value)
            drop_checkpoints(Path(config.output_dir))
            self.console.print(f"trial {trial.number}: dev {value} with {values}")
        return study

    def winner(self, study: Any, params: dict[str, Any], value: float) -> None:
        """Write the winner's config (``params``: the best trial's, grown where ``--grow`` chose a longer schedule,
        dev score ``value``) and the space plot."""
        best, finished = study.best_trial, complete_trials(study)
        grown = "" if params == best.params else f", grown from trial {best.number}'s"
        header = (
            f"# Chosen by `pcctune sweep {self.config_path}` over {len(finished)} finished trials on dev data "
            f"({self.metric} = {value:.4f}, trial {best.number}{grown}); values: {params}\n"
        )
        path = self.output / BEST_CONFIG
        dump_config(self.config(params, self.output / "winner"), path)
        write_text(path, header + path.read_text(encoding="utf-8"))
        plot_space(self.space, finished, (best.params, best.value), self.output / SPACE_PLOT)  # the search's best

    def own_run(self, config: RunConfig, **options: Any) -> RunResult:
        """Train ``config`` in its folder of the sweep, continuing or reading back a run of this config there and
        replacing one of another (a rerun whose search found another winner), then drop its checkpoints."""
        folder = Path(config.output_dir)
        held = holds_a_run(folder)
        ours = held and is_run_of(config)
        record = run_pipeline(config, resume=ours, overwrite=held and not ours, console=self.console, **options)
        drop_checkpoints(folder)
        return record

    def grow(self, params: dict[str, Any], value: float) -> tuple[dict[str, Any], float, Growth]:
        """The winner grown (``pcctune.orchestration.growth``: ``FIRST_GROWTH``, then 8× where a 4× run leads), each
        in ``OUTPUT/grown/<label>`` on dev data only, chosen again on dev: the chosen params, their dev score and the
        growth."""
        config = self.config(params, self.output / "grown")
        tried: dict[Multiple, tuple[dict[str, Any], float | None]] = {SEARCHED: (params, value)}

        def grown_run(multiple: Multiple) -> None:
            grown = multiple.params(params, config)
            folder = self.output / "grown" / multiple.label
            record = self.own_run(
                self.config(grown, folder, evaluate_before=False, evaluate_after_each_stage=False), tasks=[]
            )
            tried[multiple] = grown, record.stages[-1].best_dev_spearman if record.stages else None

        def dev_scores() -> dict[Multiple, float | None]:
            return {multiple: dev for multiple, (_, dev) in tried.items()}

        for multiple in FIRST_GROWTH:
            grown_run(multiple)
        further = leading(dev_scores()).grows_further
        if further is not None:
            grown_run(further)
        growth = Growth.of(config, dev_scores())
        grown, score = tried[parse(growth.chosen)]
        self.console.print(growth.line())
        return grown, value if score is None else score, growth

    def seed_runs(self, params: dict[str, Any], seeds: int) -> list[RunResult]:
        """The chosen ``params`` trained again at seeds 1 to ``seeds``, each run in ``OUTPUT/seeds/seed-N``."""
        results = []
        for seed in range(1, seeds + 1):
            folder = self.output / "seeds" / f"seed-{seed}"
            results.append(self.own_run(self.config(params, folder, seed=seed, evaluate_before=False)))
        return results


def sweep_identity(base: RunConfig, space: dict[str, Distribution], prune_after: int, senteval: Path) -> str:
    """sha256 of what decides a sweep's trials: the base config with its overrides, the search space, the pruning,
    the content of the files its stages train and select on (wherever the data folder lies), the pcctune code that
    runs a trial (``pcctune.provenance.code_digest``) and the libraries' versions. A study keeps it, so the trials of
    another sweep, or of this one before an upgrade, never count as this one's."""
    files = [path for stage in base.stages for path in stage_data_files(stage, senteval)]
    files += [path for task in load_test_tasks(senteval) for path in task.files]  # what the leakage filter reads
    payload = {
        "config": config_fingerprint(base),
        "space": {key: spec.model_dump() for key, spec in space.items()},
        "prune_after": prune_after,
        "data": sorted(file_sha256(path) for path in {Path(file).resolve() for file in files}),
        "code": code_digest(run_pipeline.__module__, __name__),
        "versions": library_versions(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@contextmanager
def optuna_warnings_only() -> Iterator[None]:
    """optuna's own log at WARNING for the block (a line per trial otherwise), its level as before after it."""
    import optuna

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def drop_checkpoints(run_folder: Path) -> None:
    """Delete a finished run's checkpoints: they only serve a resume (the final model, log and results stay).

    A 3-seed sweep of a 23M encoder kept 4.5 GB of them per loss (the stage-2 loss sweeps filled a 252 GB disk).
    """
    for checkpoints in run_folder.glob(f"*/{CHECKPOINTS}"):
        shutil.rmtree(checkpoints)


def run_sweep(
    config_path: Path,
    space_path: Path,
    trials: int,
    seeds: int,
    output: Path,
    overrides: dict[str, Any],
    console: Console,
    prune_after: int = 0,
    grow: bool = False,
) -> BenchmarkResult:
    """Search ``trials`` trials on dev data, write the winner's config, score it over ``seeds`` seeds.

    ``prune_after``: no trial is pruned before this training step (optuna's ``n_warmup_steps``), so a
    loss whose dev curve starts late (soft Spearman in the stage-2 loss sweeps) is not cut at its first evaluation.
    ``grow``: the winner is also trained at longer schedules and chosen again on dev (``Sweep.grow``,
    ``pcctune.orchestration.growth``).
    """
    if trials < 1 or seeds < 1:
        raise PcctuneError("--trials and --seeds must be at least 1")
    if prune_after < 0:
        raise PcctuneError("--prune-after must be at least 0")
    check_output_folder(output)
    search_seed = load_config(config_path, overrides).seed
    if 1 <= search_seed <= seeds:
        raise PcctuneError(
            f"the config's seed {search_seed} trains every search trial and is also one of the seed runs 1–{seeds}: "
            "the winner's luck on it would count in its test mean; search under another seed (--set seed=101)"
        )
    sweep = Sweep(config_path, load_space(space_path), output, overrides, console, prune_after)
    with optuna_warnings_only():
        study = sweep.search(trials)
    params, value, growth = dict(study.best_params), float(study.best_value), None
    if grow:
        params, value, growth = sweep.grow(params, value)
    sweep.winner(study, params, value)
    console.print(f"winner: {params} (dev {value:.4f}) -> {output / BEST_CONFIG}")
    summary = summarise(sweep.seed_runs(params, seeds), params, value, sweep.space, growth)
    write_summary(summary, seeds, output, console)
    return summary
