"""Running MTEB's own STS evaluator on a pcctune model, offline, on local pairs.

A pcctune model is a plain sentence-transformers model whose first module carries the template,
so MTEB encodes through it unchanged: pass the loaded ``SentenceTransformer`` to
``mteb.evaluate``. (``mteb.get_model`` resolves Hub names to MTEB's registry and has no entry
for a local folder.) On a machine with the Hub, ``mteb.get_tasks(["STS12", …])`` downloads the
data; here, :func:`local_sts_task` fills an MTEB task with pairs read from disk instead.
"""

from __future__ import annotations

from typing import Any

from sentence_transformers import SentenceTransformer

from pcctune.data.sts import STSPair


def local_sts_task(name: str, pairs: list[STSPair], split: str = "test"):
    """The MTEB task ``name`` (e.g. ``STSBenchmark``) with its data replaced by ``pairs``."""
    import mteb
    from datasets import Dataset, DatasetDict

    rows = {
        "sentence1": [p.sentence1 for p in pairs],
        "sentence2": [p.sentence2 for p in pairs],
        "score": [p.score for p in pairs],
    }
    return use_local_data(mteb.get_task(name), DatasetDict({split: Dataset.from_dict(rows)}))


def use_local_data(task: Any, dataset: Any) -> Any:
    """Give an MTEB task its data (a ``DatasetDict`` of its default subset) instead of downloading it."""
    task.dataset = {"default": dataset}
    task.data_loaded = True
    return task


def evaluate_with_mteb(model: SentenceTransformer, task: Any) -> dict[str, Any]:
    """MTEB's scores for one task (``cosine_spearman`` etc., as fractions), without a results cache."""
    import mteb

    result = mteb.evaluate(model, task, cache=None, show_progress_bar=False)
    split = next(iter(result.task_results[0].scores))
    return dict(result.task_results[0].scores[split][0])
