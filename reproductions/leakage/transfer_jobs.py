"""The wide search's transfer evaluations: of a model on this machine, or, where this machine lacks it, of the
run that made it trained again from its record.

A winner's transfer tasks read its best test seed's saved model, and that model lives in the run folders of the
machine that trained it, which the next machine does not get. Where it is missing, the run is trained again from
the config its record keeps (the same training set, setting and seed; no test set read) into a folder of its own,
and the transfer tasks read that model. Another kind of CPU rounds the same run differently, so the model is
another draw of that run, not the one its test scores came from: the transfer record says so in its ``versions``
(:data:`NOTES`: where it was trained again, and the dev score of its chosen checkpoint beside the record's).
"""

from __future__ import annotations

from pathlib import Path

from pcctune.results import EvalResult, RunResult
from pcctune.training.config import RunConfig

NOTES = ("model_trained_again_on", "dev_spearman_trained_again", "dev_spearman_of_the_scored_run")
"""The keys a transfer record's ``versions`` gains when its model was trained again."""


def transfer_once(model: str, record: Path, data: str | None, probe_seed: int) -> None:
    """``pcctune eval MODEL --tasks transfer --probe-seed SEED`` into ``record``."""
    from reproductions._common import pcctune

    argv = ["eval", model, "--tasks", "transfer", "--probe-seed", str(probe_seed), "--output", str(record)]
    pcctune([*argv, *(["--data", data] if data else [])])


def model_here(trained: RunResult) -> bool:
    """Whether this machine holds the model ``trained`` saved: its run folder (as the record names it, from the
    runner's folder) holds that very run, not another run that used the same folder (a first winner's test run of
    the same seed, where an early grown record named that folder), and its final model is there."""
    from pcctune.orchestration.run_folder import is_run_of

    return is_run_of(RunConfig.model_validate(trained.config)) and Path(trained.stages[-1].final_dir).is_dir()


def train_again_then_transfer(
    trained: RunResult, folder: Path, record: Path, data: str | None, probe_seed: int
) -> None:
    """Train ``trained``'s run again into ``folder`` (``train_once``: resuming a cut-off one, its record beside the
    folder so that a failed evaluation does not train it a third time), then its transfer tasks into ``record``
    with :data:`NOTES`."""
    from reproductions._common import train_once

    config = RunConfig.model_validate(
        trained.config | {"output_dir": str(folder)} | ({"data_dir": data} if data else {})
    )
    again = train_once(config, folder.with_name(f"{folder.name}.json"), score=False)
    transfer_once(again.stages[-1].final_dir, record, data, probe_seed)
    notes = dict(zip(NOTES, (again.versions.get("device", "unknown"), _dev(again), _dev(trained)), strict=True))
    result = EvalResult.from_disk(record)
    result.model_copy(update={"versions": result.versions | notes}).to_disk(record)


def _dev(result: RunResult) -> str:
    value = result.stages[-1].best_dev_spearman
    return "none" if value is None else f"{value:.6f}"
