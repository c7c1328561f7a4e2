"""Which test sets an evaluation scores: a group (``sts``, ``transfer``, ``all``), task names, or both, as
``pcctune eval --tasks`` and ``pcctune.evaluate(tasks=...)`` take them.

A group stands for its tasks: ``sts`` the seven STS tasks (STS12–16, STS-B, SICK-R), ``transfer`` SentEval's seven
transfer tasks (MR … MRPC), ``all`` both. Names are chosen within either kind (``STSBenchmark,SICKRelatedness``,
``MR,CR``, ``sts,MR``), in any case, or by the short names of the tables (``STS-B``, ``SICK-R``, ``SST-2``); each
kind is scored in its usual order, whatever the order given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from pcctune.data.tasks import SEVEN_TASKS, SHORT_NAMES
from pcctune.data.transfer import TRANSFER_TASKS
from pcctune.errors import PcctuneError, unknown

TaskGroup = Literal["sts", "transfer", "all"]
TASK_GROUPS: tuple[str, ...] = get_args(TaskGroup)
TaskChoice = str | Sequence[str]
"""A group, a task name, a comma-separated string of them, or a list of them."""
TASK_ALIASES: dict[str, str] = {
    **{name.casefold(): name for name in (*TASK_GROUPS, *SEVEN_TASKS, *TRANSFER_TASKS)},
    **{short.casefold(): name for name, short in SHORT_NAMES.items()},
    "sst-2": "SST2",
}
"""Each group's and task's name in any case, and the tables' short names, to the name records use."""
GROUP_TASKS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "sts": (SEVEN_TASKS, ()),
    "transfer": ((), TRANSFER_TASKS),
    "all": (SEVEN_TASKS, TRANSFER_TASKS),
}


def task_name(entry: str) -> str:
    """The group or task ``entry`` names (``TASK_ALIASES``: ``sts-b`` is ``STSBenchmark``), else ``entry`` itself."""
    return TASK_ALIASES.get(entry.strip().casefold(), entry)


@dataclass(frozen=True)
class TaskSelection:
    """The STS tasks and the transfer tasks chosen, each in its usual order."""

    sts: tuple[str, ...]
    transfer: tuple[str, ...]


def select_tasks(tasks: TaskChoice) -> TaskSelection:
    """The tasks ``tasks`` names; an unknown name or an empty choice refused in one line.

    Examples:
        >>> select_tasks("STSBenchmark,MR")
        TaskSelection(sts=('STSBenchmark',), transfer=('MR',))
        >>> select_tasks("sts-b,sick-r").sts
        ('STSBenchmark', 'SICKRelatedness')
    """
    entries = [e.strip() for e in tasks.split(",")] if isinstance(tasks, str) else [str(e).strip() for e in tasks]
    entries = [entry for entry in entries if entry]
    if not entries:
        raise PcctuneError("tasks is empty; give sts, transfer, all or task names (STSBenchmark,MR)")
    sts: set[str] = set()
    transfer: set[str] = set()
    for entry in map(task_name, entries):
        if entry in GROUP_TASKS:
            sts.update(GROUP_TASKS[entry][0])
            transfer.update(GROUP_TASKS[entry][1])
        elif entry in SEVEN_TASKS:
            sts.add(entry)
        elif entry in TRANSFER_TASKS:
            transfer.add(entry)
        else:
            raise PcctuneError(unknown("task", entry, [*TASK_GROUPS, *SEVEN_TASKS, *TRANSFER_TASKS]))
    return TaskSelection(
        tuple(name for name in SEVEN_TASKS if name in sts), tuple(name for name in TRANSFER_TASKS if name in transfer)
    )
