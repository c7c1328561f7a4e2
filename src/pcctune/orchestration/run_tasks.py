"""The test sets a run scores before and after its stages: the ``tasks`` of its config (``pcctune train --tasks``).

``sts`` is the protocol's seven STS test sets, ``none`` no test set at all (the run trains and selects on dev data
alone), and a list names STS tasks and the user's own test pair files or Hub datasets (``pcctune eval --pairs``'s
sources, each scored as one task): the STS tasks first, in the order given, then the user's sets.
"""

from __future__ import annotations

from pathlib import Path

from pcctune.data.sts import STSTask
from pcctune.data.tasks import STS_TASKS, load_task
from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import load_protocol_tasks, protocol_data_dir
from pcctune.orchestration.evaluate import load_pair_sets
from pcctune.training.config import RunConfig


def run_test_tasks(config: RunConfig, senteval: Path) -> list[STSTask]:
    """The test tasks ``config.tasks`` names, the STS ones in the text form of its protocol."""
    tasks: list[STSTask] = []
    own: list[str] = []
    for entry in config.task_entries:
        if entry == "sts":
            tasks += load_protocol_tasks(senteval, config.eval_protocol)
        elif entry in STS_TASKS:
            tasks.append(load_task(protocol_data_dir(senteval, config.eval_protocol), entry))
        else:
            own.append(entry)
    tasks += [pair_set.task() for pair_set in load_pair_sets(own)]
    names = [task.name for task in tasks]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise PcctuneError(f"tasks: {', '.join(repeated)} named twice; name each test set once")
    return tasks
