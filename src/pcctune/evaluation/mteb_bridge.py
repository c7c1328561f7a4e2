"""Running MTEB's own STS evaluator on a pcctune model, offline, on local pairs.

A pcctune model is a plain sentence-transformers model whose first module carries the template,
so MTEB encodes through it unchanged: pass the loaded ``SentenceTransformer`` to
``mteb.evaluate``. (``mteb.get_model`` resolves Hub names to MTEB's registry and has no entry
for a local folder.) On a machine with the Hub, ``mteb.get_tasks(["STS12", …])`` downloads the
data; offline, ``use_local_data`` gives a task a ``DatasetDict`` saved to disk instead (``pcctune mteb
--local-data``).
"""

from __future__ import annotations

from typing import Any


def use_local_data(task: Any, dataset: Any) -> Any:
    """Give an MTEB task its data (a ``DatasetDict`` of its default subset) instead of downloading it."""
    task.dataset = {"default": dataset}
    task.data_loaded = True
    return task
