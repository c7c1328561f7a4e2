"""The base model's test scores, kept between runs.

A run with ``evaluate_before: true`` scores its base model on the test sets before training: about 26,000
sentences, a minute on two CPU cores for all-MiniLM-L6-v2 and more for a decoder, and the same numbers every time
the same base model is scored the same way. A run that loads the same model (its weights, tokenizer and module
settings as loaded: `pcctune.modeling.fingerprint`), under the same encoding settings, test pairs and seed, with the
same libraries, device, speed settings and pcctune code, reads an earlier run's scores from pcctune's cache
(``scores/before-KEY``, a verified entry: `pcctune.cache_entry`) instead of encoding again. The key is taken from
the model once it is loaded, so an adapter whose base changed, or a Hub id loaded at another commit, is a miss.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from sentence_transformers import SentenceTransformer

from pcctune.cache_entry import cached_folder
from pcctune.data.pairs import pairs_sha256
from pcctune.data.sts import STSTask
from pcctune.io import write_json
from pcctune.modeling.fingerprint import computation_key
from pcctune.modeling.weight_files import model_folders
from pcctune.paths import cache_root
from pcctune.training.config import RunConfig

KIND = "scores"
SCORES = "scores.json"
COMPUTED_BY = "pcctune.evaluation.sts"
"""The module whose code (with all it imports: the encoding, the protocols, the model's loading) scores a base model:
part of every key. A change elsewhere (a loss, the training loop) leaves the kept scores valid."""


def tasks_digest(tasks: list[STSTask]) -> str:
    """sha256 of the test pairs themselves (each subset's task and name, and its pairs'
    `pcctune.data.pairs.pairs_sha256`): a subsample is another set."""
    payload = [(task.name, subset.name, pairs_sha256(subset.pairs)) for task in tasks for subset in task.subsets]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def before_key(
    config: RunConfig, tasks: list[STSTask], precision: str | None, model: SentenceTransformer
) -> str | None:
    """sha256 of everything the base model's scores depend on: ``model`` as loaded for scoring, the settings that
    act after loading (the evaluation's dtype and protocol), the test pairs, and the code and device
    (`pcctune.modeling.fingerprint.computation_key`); ``None`` where the model cannot be digested. The run's seed
    is not in it: scoring draws nothing at random, so every seed of a grid reads one base score.
    ``precision``: a QLoRA run's evaluation base (``16bit`` / ``4bit``). ``model`` is the run's model just loaded
    (``pcctune.orchestration.pipeline.load_base``), so a local folder's files stand for the weights they hold
    (`pcctune.modeling.weight_files`)."""
    settings = {
        "scored": "the base model, no MLP head, before training",
        "eval_dtype": config.eval_dtype,
        "protocol": config.eval_protocol,
        "precision": precision,
        "tasks": tasks_digest(tasks),
    }
    return computation_key(settings, model, COMPUTED_BY, read_from=model_folders(config.model))


def entry(key: str) -> Path:
    """The cache folder of the base model's scores computed under ``key``."""
    return cache_root() / KIND / f"before-{key[:32]}"


def scores_kept(key: str, score: Callable[[], dict[str, float]]) -> dict[str, float]:
    """``score()``'s result, kept under ``key`` (two processes asking at once: one scores, the other reads)."""
    found: dict[str, float] = {}

    def build(staging: Path) -> None:
        found.update(score())
        write_json({"key": key, "sts": found}, staging / SCORES)

    folder = cached_folder(entry(key), build, "the base model's test scores of a pcctune run")
    return found or json.loads((folder / SCORES).read_text(encoding="utf-8"))["sts"]
