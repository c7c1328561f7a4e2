"""What ``pcctune eval --tasks`` / ``pcctune.evaluate(tasks=...)`` chooses: groups, names, both."""

from __future__ import annotations

import pytest

from pcctune.data.task_selection import TaskSelection, select_tasks
from pcctune.data.tasks import SEVEN_TASKS
from pcctune.data.transfer import TRANSFER_TASKS
from pcctune.errors import PcctuneError


@pytest.mark.parametrize(
    ("tasks", "sts", "transfer"),
    [
        ("sts", SEVEN_TASKS, ()),
        ("transfer", (), TRANSFER_TASKS),
        ("all", SEVEN_TASKS, TRANSFER_TASKS),
        ("SICKRelatedness, STS12", ("STS12", "SICKRelatedness"), ()),  # each kind in its usual order
        (["TREC", "MR", "MR"], (), ("MR", "TREC")),  # a list; a name given twice is scored once
        ("sts,MRPC", SEVEN_TASKS, ("MRPC",)),
        ("STS13,sts", SEVEN_TASKS, ()),
        ("sts-b, SICK-R,sst-2,Transfer", ("STSBenchmark", "SICKRelatedness"), TRANSFER_TASKS),  # the tables' names
    ],
)
def test_groups_and_names(tasks, sts, transfer):
    assert select_tasks(tasks) == TaskSelection(sts, transfer)


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ("", "tasks is empty"),
        (" , ", "tasks is empty"),
        ([], "tasks is empty"),
        ("STS12,sick", "unknown task 'sick'; choose from sts, transfer, all, STS12"),
        ("STSBenchmrk", "did you mean `STSBenchmark`?"),
    ],
)
def test_refusals_are_one_line(tasks, message):
    with pytest.raises(PcctuneError, match=message) as refused:
        select_tasks(tasks)
    assert "\n" not in str(refused.value)
