"""The base model's test scores, kept between runs.

A run with ``evaluate_before: true`` scores its base model on the test sets before training: about 26,000
sentences, a minute on two CPU cores for all-MiniLM-L6-v2 and more for a decoder, and the same numbers every time
the same base model is scored the same way. A run whose base model (its files, or the Hub commit it loads),
encoding settings, test pairs, seed and library versions are those of an earlier run's reads that run's scores
from pcctune's cache (``scores/before-KEY``, a verified entry: `pcctune.cache_entry`) instead of encoding
them again. A Hub model not downloaded yet has no commit to pin, so its scores are neither read nor kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from pcctune.cache_entry import cached_folder
from pcctune.data.sts import STSTask
from pcctune.io import write_json
from pcctune.modeling.build import resolve_source
from pcctune.modeling.vector_store import hub_revision, settings_key
from pcctune.paths import cache_root
from pcctune.provenance import library_versions
from pcctune.training.config import RunConfig

KIND = "scores"
SCORES = "scores.json"


def tasks_digest(tasks: list[STSTask]) -> str:
    """sha256 of the test pairs themselves (names, sentences, gold scores): a subsample is another set."""
    payload = [
        (task.name, [(p.sentence1, p.sentence2, p.score) for p in subset.pairs], subset.name)
        for task in tasks
        for subset in task.subsets
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def before_key(config: RunConfig, tasks: list[STSTask], precision: str | None) -> str | None:
    """sha256 of everything the base model's scores depend on; None when the model cannot be pinned (a Hub id not
    in the local Hugging Face cache yet). ``precision``: a QLoRA run's evaluation base (``16bit`` / ``4bit``)."""
    source = resolve_source(config.model)
    if source.origin == "hub" and hub_revision(source.path) is None:
        return None
    settings = {
        "scored": "the base model, no MLP head, before training",
        "model": config.model,
        "template": config.template,
        "pooling": config.pooling,
        "dtype": config.dtype,
        "eval_dtype": config.eval_dtype,
        "protocol": config.eval_protocol,
        "precision": precision,
        "adapter": config.adapter.model_dump(mode="json"),
        "seed": config.seed,
        "tasks": tasks_digest(tasks),
        "versions": library_versions(),
    }
    return settings_key(settings, Path(source.path))


def entry(key: str) -> Path:
    return cache_root() / KIND / f"before-{key[:32]}"


def scores_kept(key: str, score: Callable[[], dict[str, float]]) -> dict[str, float]:
    """``score()``'s result, kept under ``key`` (two processes asking at once: one scores, the other reads)."""
    found: dict[str, float] = {}

    def build(staging: Path) -> None:
        found.update(score())
        write_json({"key": key, "sts": found}, staging / SCORES)

    folder = cached_folder(entry(key), build, "the base model's test scores of a pcctune run")
    return found or json.loads((folder / SCORES).read_text(encoding="utf-8"))["sts"]
