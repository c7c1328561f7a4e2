"""``pcctune mteb``: MTEB's own evaluation of a pcctune model, writing MTEB's own result files.

Tasks are MTEB task names, or two groups: ``sts`` (the seven STS tasks, under MTEB's protocol,
not SentEval's: e.g. SICK-R over all 9,927 pairs) and ``paper`` (the eight tasks of the
Pcc-tuning paper's Appendix C, Table 6). Results go to MTEB's ``ResultCache`` layout under
``--output`` (``results/<model>/<revision>/<task>.json``), which ``mteb`` reads back; ``<model>`` is
``--model-name``, else the name the model's card data gives, else the model as given (a packaged model: its Hub
id, a local folder: its own name), with ``+eol`` added under ``--template eol`` (``template_suffix``); never MTEB's
placeholder.

Where the Hub is unreachable, ``--local-data DIR`` supplies a task's data as a ``datasets``
folder ``DIR/<TaskName>`` (``DatasetDict.save_to_disk`` with the task's splits and columns); the
code path is otherwise the one that downloads from the Hub.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from pcctune.errors import PcctuneError
from pcctune.evaluation.mteb_bridge import use_local_data
from pcctune.evaluation.tables import ScoreTable
from pcctune.io import check_output_folder
from pcctune.modeling.build import build_model
from pcctune.modeling.registry import PACKAGED_MODELS, packaged_key
from pcctune.modeling.template import PRESETS
from pcctune.seeding import random_state_kept

TASK_GROUPS = {
    "sts": ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICK-R"],
    "paper": [
        "Banking77Classification",
        "TwitterSemEval2015",
        "AskUbuntuDupQuestions",
        "StackOverflowDupQuestions",
        "CQADupstackEnglishRetrieval",
        "LegalSummarization",
        "FaithDial",
        "PIQA",
    ],
}


def task_names(spec: str) -> list[str]:
    """``sts``, ``paper`` or comma-separated MTEB task names, in order, without repeats."""
    names: list[str] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        names += [n for n in TASK_GROUPS.get(part.lower(), [part]) if n not in names]
    if not names:
        raise PcctuneError("give --tasks: sts, paper, or MTEB task names separated by commas")
    return names


def load_mteb_task(name: str, local_data: Path | None) -> Any:
    """MTEB's task ``name``; its data from ``local_data/name`` when that folder exists, else the Hub."""
    import mteb

    try:
        task = mteb.get_task(name)
    except Exception as error:  # mteb raises KeyError/ValueError with suggestions for unknown names
        raise PcctuneError(f"unknown MTEB task {name!r}: {str(error).splitlines()[0]}") from None
    folder = local_data / name if local_data is not None else None
    if folder is not None and folder.is_dir():
        from datasets import load_from_disk

        use_local_data(task, load_from_disk(str(folder)))
    return task


@random_state_kept()
def run_mteb(
    model_spec: str,
    tasks: str,
    output: Path,
    local_data: Path | None,
    template: str | None,
    console: Console,
    model_name: str | None = None,
) -> dict[str, float]:
    """Evaluate with ``mteb.evaluate`` into ``output`` (MTEB's result cache); return each task's main score. mteb
    seeds the global random generators (at import, and for each task); the caller's states are put back."""
    import mteb
    from mteb.cache import ResultCache

    check_output_folder(output)
    if local_data is not None and not local_data.is_dir():
        raise PcctuneError(f"--local-data {local_data}: no such folder")
    selected = [load_mteb_task(name, local_data) for name in task_names(tasks)]
    model = build_model(model_spec, template=template)
    named = model.model_card_data.model_name or mteb_name(model_spec)
    model.model_card_data.model_name = model_name or named + template_suffix(template)
    with removed_if_left_empty(output):
        result = mteb.evaluate(
            model, selected, cache=ResultCache(output), overwrite_strategy="always", show_progress_bar=False
        )
    scores = {task.task_name: task.get_score() * 100 for task in result.task_results}
    table = ScoreTable(
        f"MTEB main scores × 100 ({model_spec})", list(scores), [(model_spec, scores)], first_column="model"
    )
    table.print(console)
    console.print(f"MTEB result files -> {output}")
    return scores


@contextlib.contextmanager
def removed_if_left_empty(folder: Path) -> Iterator[None]:
    """Remove ``folder`` where this block created it and fails with nothing in it but empty folders (MTEB's result
    cache makes its layout before a task's data is reached)."""
    existed = folder.exists()
    try:
        yield
    except BaseException:
        if not existed and folder.is_dir() and not any(path.is_file() for path in folder.rglob("*")):
            shutil.rmtree(folder)
        raise


def mteb_name(model_spec: str) -> str:
    """The name MTEB files a model's results under where neither ``--model-name`` nor its card data gives one: a
    packaged model's Hub id, a local folder's own name (no local path in a result), else the Hub id as given."""
    key = packaged_key(model_spec)
    if key is not None:
        return PACKAGED_MODELS[key].hub_id
    path = Path(model_spec).expanduser()
    return path.resolve().name if path.exists() else model_spec


def template_suffix(template: str | None) -> str:
    """What a model evaluated under ``--template`` adds to its name, so its results do not land on (and, MTEB
    overwriting, replace) the model's own: ``+eol`` for a preset, ``+template-`` and a digest for a text."""
    if template is None:
        return ""
    if template in PRESETS:
        return f"+{template}"
    return f"+template-{hashlib.sha256(template.encode()).hexdigest()[:8]}"
