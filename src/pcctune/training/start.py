"""The dev score of the model a stage starts from: what its checkpoints have to beat.

sentence-transformers' trainer (``load_best_model_at_end``) ranks the checkpoints it saved; the model the stage
started from (the base model, or the previous stage's saved model) is never among them, so a stage whose training
lowered the dev score still names a "best" checkpoint. Before its first step a stage scores its starting model on
its own dev set, under its own input lengths, as the trainer scores each checkpoint; the run's line, its record
(``start_dev_spearman``) and the model card show both, and ``keep_start_if_best`` saves the starting model as
``final`` where no checkpoint beat it.

The score is kept in pcctune's cache (``scores/dev-start-KEY``, a verified entry: ``pcctune.cache_entry``), keyed
as the base model's test scores are (``pcctune.modeling.fingerprint.computation_key``): the model as loaded, the dev
pairs themselves, the stage's input lengths, and the code and machine. A resumed stage reads it back.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer

from pcctune.cache_entry import cached_folder
from pcctune.data.pairs import pairs_sha256
from pcctune.io import write_json
from pcctune.modeling.fingerprint import computation_key
from pcctune.paths import cache_root
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.dev import DevSTSEvaluator

KIND = "scores"
SCORE = "score.json"


def dev_digest(evaluator: DevSTSEvaluator) -> dict[str, str]:
    """Each dev part's name → the sha256 of its pairs (sentences and gold scores: `pcctune.data.pairs.pairs_sha256`,
    the one hash of pairs every key uses)."""
    return {part: pairs_sha256(pairs) for part, pairs in evaluator.parts.items()}


def start_key(model: SentenceTransformer, stage: StageConfig, run: RunConfig, evaluator: DevSTSEvaluator) -> str | None:
    """sha256 of everything the starting model's dev score depends on (``None`` where the model cannot be digested:
    then it is scored, not kept)."""
    settings = {
        "scored": "a stage's starting model on its dev set, before its first step",
        "dev": dev_digest(evaluator),
        "metric": evaluator.primary_metric,
        "max_seq_length": stage.max_seq_length,
        "sentence_max_tokens": stage.sentence_max_tokens,
        "onednn": run.onednn,
    }
    return computation_key(settings, model, __name__)


def start_score(model: SentenceTransformer, evaluator: DevSTSEvaluator, key: str | None) -> float:
    """``model``'s dev score (Spearman's ρ as a fraction, the trainer's ``metric_for_best_model``), read from the
    cache under ``key`` where an earlier run scored it, else scored and kept there."""

    def score() -> float:
        return float(evaluator.metrics(model)[str(evaluator.primary_metric)])

    if key is None:
        return score()
    found: list[float] = []

    def build(staging: Path) -> None:
        found.append(score())
        write_json({"key": key, "dev": found[0]}, staging / SCORE)

    folder = cached_folder(cache_root() / KIND / f"dev-start-{key[:32]}", build, "a stage's starting dev score")
    return found[0] if found else float(json.loads((folder / SCORE).read_text(encoding="utf-8"))["dev"])


def start_beaten(start: float | None, best: float | None) -> bool | None:
    """Whether a checkpoint scored above the starting model on dev (``None`` where either score is missing)."""
    return None if start is None or best is None else best > start


def start_weights(model: SentenceTransformer) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s trainable weights on the CPU, before its first step: what ``keep_start_if_best`` puts
    back where no checkpoint beat the starting model (its frozen weights never change)."""
    return {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters() if p.requires_grad}
