"""The dev evaluator that selects a stage's checkpoints (a dev set filtered at the stage's leakage level, never a
test set).

It scores like sentence-transformers' ``EmbeddingSimilarityEvaluator`` (Spearman and Pearson of
the cosine similarity, metric names ``{name}_spearman_cosine`` …, fractions in [−1, 1] as that evaluator's, where
pcctune's test scores are × 100: docs/losses.md#scales) but encodes through pcctune's
fast path (``pcctune.modeling.encoding``): each distinct sentence once, batched by token
length, sharded across processes under DDP.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
from typing_extensions import override

from pcctune.correlation import score_pairs
from pcctune.data.cache import senteval_folder
from pcctune.data.dev import COMBINED_DEV, HOLDOUT, SINGLE_DEV_SETS, dev_entries, dev_name, dev_parts, size_weighted
from pcctune.data.leakage import PAPER_LEVEL, LeakageLevel, leakage_level
from pcctune.data.sts import STSPair
from pcctune.errors import PcctuneError
from pcctune.losses.registry import loss_spec
from pcctune.modeling.encoding import encode_unique
from pcctune.paths import FilesState, config_path, files_state
from pcctune.training.config import StageConfig
from pcctune.training.datasets import (
    own_test_files,
    removed_by_filter,
    scored_pairs,
    source_files,
    source_key,
    test_tasks_of,
)


class DevSTSEvaluator(SentenceEvaluator):
    """Cosine-similarity correlations with the gold scores of one or more dev sets.

    With one set the metrics are ``{name}_spearman_cosine`` and ``{name}_pearson_cosine``. With
    several (``sick-trial+stsb-dev``) each set is scored on its own (``{name}_{part}_…``) and the
    primary metric is their mean weighted by pair count (``pcctune.data.dev.size_weighted``).
    """

    def __init__(self, parts: dict[str, list[STSPair]], name: str) -> None:
        super().__init__()
        self.parts = parts
        self.name = name
        self.primary_metric = f"{name}_spearman_cosine"

    @classmethod
    def named(
        cls,
        dev_set: str | Sequence[str] = COMBINED_DEV,
        data: str | Path | None = None,
        level: LeakageLevel | str = PAPER_LEVEL,
    ) -> DevSTSEvaluator:
        """An evaluator of ``sick-trial``, ``stsb-dev-filtered``, both (``sick-trial+stsb-dev``) or pair files, with
        every pair a leakage filter at ``level`` flags removed; ``data``: the SentEval folder."""
        return cls(dev_parts(dev_set, senteval_folder(data), leakage_level(level)), dev_name(dev_set))

    @override
    def __call__(
        self, model: Any, output_path: str | None = None, epoch: float = -1, steps: int = -1
    ) -> dict[str, float]:
        metrics = self.metrics(model)
        self.store_metrics_in_model_card_data(model, metrics, int(epoch), steps)
        return metrics

    def metrics(self, model: Any) -> dict[str, float]:
        """``model``'s scores on the dev set (fractions), as the trainer receives them; nothing is stored."""
        texts = [s for pairs in self.parts.values() for p in pairs for s in (p.sentence1, p.sentence2)]
        vectors = encode_unique(model, texts, show_progress=False, shard=False)  # only rank 0 runs an evaluator
        scores = {part: score_pairs(vectors, pairs) for part, pairs in self.parts.items()}
        if len(scores) == 1:
            (only,) = scores.values()
            metrics = {f"{self.name}_pearson_cosine": only.pearson, f"{self.name}_spearman_cosine": only.spearman}
        else:
            metrics = {f"{self.name}_{part}_spearman_cosine": r.spearman for part, r in scores.items()}
            for statistic in ("pearson", "spearman"):
                weighted = size_weighted({part: getattr(r, statistic) for part, r in scores.items()}, self.parts)
                metrics[f"{self.name}_{statistic}_cosine"] = weighted
        return metrics

    def store_metrics_in_model_card_data(
        self, model: Any, metrics: dict[str, Any], epoch: int = 0, step: int = 0
    ) -> None:
        """The saved model's card shows the dev scores × 100, as it shows every score (docs/losses.md#scales); the
        metrics this evaluator returns to the trainer stay fractions."""
        shown = {key: value * 100 for key, value in metrics.items()}
        super().store_metrics_in_model_card_data(model, shown, epoch, step)


def stage_dev_parts(stage: StageConfig, senteval_dir: Path) -> dict[str, list[STSPair]]:
    """The parts of ``stage``'s dev set, filtered at its data's leakage level (empty for ``dev: none``); a held-out
    share comes from its scored training pairs (``pcctune.data.dev.dev_parts``)."""
    if stage.dev == "none":
        return {}
    files = [Path(part) for part in dev_entries(stage.dev) if part != HOLDOUT and part not in SINGLE_DEV_SETS]
    _, folder, data_files = source_key(stage.data, senteval_dir)
    return _stage_dev_parts(stage.model_dump_json(exclude_unset=True), folder, data_files + files_state(files))


@lru_cache(maxsize=4)
def _stage_dev_parts(stage_json: str, senteval_dir: Path, files: FilesState) -> dict[str, list[STSPair]]:
    """``stage_dev_parts`` once per stage config and state of the files it reads (``files``: in the key only)."""
    stage = StageConfig.model_validate_json(stage_json)
    data = stage.data
    return dev_parts(
        stage.dev,
        senteval_dir,
        data.filter_level,
        data.near_threshold,
        lambda: scored_pairs(data, senteval_dir),
        test_tasks_of(data, senteval_dir),
    )


def holds_out(stage: StageConfig, senteval_dir: Path) -> bool:
    """Whether ``stage`` selects on a held-out share of its training pairs (which its training then leaves out)."""
    return HOLDOUT in stage_dev_parts(stage, senteval_dir)


def dev_evaluator(stage: StageConfig, senteval_dir: Path) -> DevSTSEvaluator | None:
    """The evaluator of ``stage``'s dev set, filtered at its leakage level, or ``None`` for ``none``."""
    if stage.dev == "none":
        return None
    return DevSTSEvaluator(stage_dev_parts(stage, senteval_dir), dev_name(stage.dev))


def dev_metric(dev_set: str | Sequence[str]) -> str | None:
    """The trainer's name for the dev score of ``dev_set`` (what ``metric_for_best_model`` selects on)."""
    return None if dev_set == "none" else f"eval_{dev_name(dev_set)}_spearman_cosine"


def stage_data_files(stage: StageConfig, senteval_dir: Path) -> list[Path]:
    """The files ``stage`` trains and selects on, as far as they are files: its source's (``source_files``), the
    user's test files it is filtered against, the built-in dev sets and the user's dev files (what a run record and
    a sweep's identity hash beside the test files). A file that is not there is one line naming the stage and the
    setting that reads it."""
    files = _present(stage, "data", source_files(stage, senteval_dir))
    files += _present(stage, "data.leakage_against", own_test_files(stage.data))
    for entry in dev_entries(stage.dev) if stage.dev != "none" else []:
        if entry in SINGLE_DEV_SETS:
            files += _present(stage, "dev", SINGLE_DEV_SETS[entry](senteval_dir).files)
        elif entry != HOLDOUT:
            files += _present(stage, "dev", [Path(entry)])
    return files


def _present(stage: StageConfig, setting: str, files: list[Path]) -> list[Path]:
    missing = next((file for file in files if not Path(file).is_file()), None)
    if missing is not None:
        raise PcctuneError(f"stage {stage.name!r}: {setting} reads {config_path(missing)}, which is not a file")
    return files


def leakage_filter(stage: StageConfig, senteval_dir: Path) -> dict[str, Any]:
    """What a run record says of ``stage``'s leakage filter: its level (``none``: the training pairs kept whole), the
    user's own test files it also checked against, and the training pairs it removed beyond a stage-2 set's own
    report (empty for triplets, which are counted and never filtered)."""
    data = stage.data
    if loss_spec(stage.loss).data == "triplets":
        return {}
    against = [Path(file).name for file in data.leakage_against]
    return {"level": str(data.leakage), "against": against, "removed": removed_by_filter(data, senteval_dir)}
