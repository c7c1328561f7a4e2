"""Training and dev sets of a stage, as ``datasets.Dataset`` columns the losses expect."""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from pcctune.data.leakage import LeakageFilter, Normalization
from pcctune.data.nli import read_simcse_csv, read_snli_folder, read_snli_regression_pairs
from pcctune.data.senteval import load_sick, load_stsb, load_test_tasks
from pcctune.data.stage2 import build_stage2_set
from pcctune.data.sts import STSPair, read_pairs_file
from pcctune.errors import PcctuneError
from pcctune.losses.factory import SCORED
from pcctune.training.config import DataConfig, StageConfig


def scored_pairs(data: DataConfig, senteval_dir: Path) -> list[STSPair]:
    if data.source == "stage2":
        result = build_stage2_set(senteval_dir, Normalization(data.normalization), data.rescale_sick)
        return [STSPair(p.sentence1, p.sentence2, p.score) for p in result.pairs]
    if data.source == "pairs":
        if not data.path:
            raise PcctuneError("data.path is required for source 'pairs'")
        return read_pairs_file(data.path)
    if data.source == "snli_regression":
        return read_snli_regression_pairs(data.path or senteval_dir / "downstream" / "SNLI", tuple(data.splits))
    raise PcctuneError(f"source {data.source!r} has no scores; use stage2 or pairs for this loss")


def contrastive_pairs(pairs: list[STSPair], threshold: float) -> list[STSPair]:
    """Pcc-tuning §4.3 baseline: pairs scored above ``threshold`` become positives."""
    return [pair for pair in pairs if pair.score > threshold]


def dpo_dataset(stage: StageConfig, senteval_dir: Path, stage_dir: Path, seed: int) -> Dataset:
    """Preferences ranked by a cross-encoder (trained on the filtered stage-2 set unless one is given)."""
    from sentence_transformers import CrossEncoder

    from pcctune.modeling.build import resolve_source
    from pcctune.training.preference import preference_dataset, sample_preferences, train_preference_model

    dpo = stage.dpo
    stage2 = scored_pairs(DataConfig(source="stage2"), senteval_dir)
    if dpo.preference_model:
        scorer = CrossEncoder(dpo.preference_model)
    else:
        scorer = train_preference_model(resolve_source(dpo.preference_base).path, stage2, stage_dir / "preference_model",
                                        epochs=dpo.preference_epochs, seed=seed)
    if dpo.candidates == "stage2":
        candidates = [(p.sentence1, p.sentence2) for p in stage2]
    else:
        candidates = [(p.sentence1, p.sentence2)
                      for p in read_snli_regression_pairs(senteval_dir / "downstream" / "SNLI", ("dev", "test"))]
    preferences = sample_preferences(scorer, candidates, dpo.count, dpo.margin, dpo.mode, seed)
    return preference_dataset(preferences)


def train_dataset(stage: StageConfig, senteval_dir: Path, stage_dir: Path | None = None, seed: int = 42) -> Dataset:
    """Columns (sentence1, sentence2, score) for scored losses; (anchor, positive[, negative]) otherwise.

    Scores are floats, except: ``ce`` takes the rounded score as a class index, and
    ``cosine_mse`` (sentence-transformers' CosineSimilarityLoss) takes the score divided by the
    set's maximum, since it regresses the cosine itself.
    """
    data = stage.data
    if stage.loss == "dpo":
        return dpo_dataset(stage, senteval_dir, stage_dir or Path("runs/dpo"), seed)
    if stage.loss in (*SCORED, "contrastive"):
        pairs = scored_pairs(data, senteval_dir)
        if stage.loss == "contrastive":
            pairs = contrastive_pairs(pairs, stage.contrastive_threshold)
        pairs = pairs[: data.limit] if data.limit else pairs
        if stage.loss == "contrastive":
            columns = {"anchor": [p.sentence1 for p in pairs], "positive": [p.sentence2 for p in pairs]}
        else:
            scores: list = [p.score for p in pairs]
            if stage.loss == "ce":
                scores = [int(round(score)) for score in scores]
            elif stage.loss == "cosine_mse":
                top = max(scores)
                scores = [score / top for score in scores]
            columns = {"sentence1": [p.sentence1 for p in pairs], "sentence2": [p.sentence2 for p in pairs],
                       "score": scores}
    else:
        if data.source == "simcse_csv":
            triplets = read_simcse_csv(data.path or "")
        elif data.source == "snli":
            triplets = read_snli_folder(data.path or senteval_dir / "downstream" / "SNLI", tuple(data.splits))
        else:
            raise PcctuneError(f"loss 'infonce' needs triplets (simcse_csv or snli), not {data.source!r}")
        triplets = triplets[: data.limit] if data.limit else triplets
        columns = {"anchor": [t.anchor for t in triplets], "positive": [t.positive for t in triplets]}
        if all(t.negative is not None for t in triplets):
            columns["negative"] = [t.negative for t in triplets]
    dataset = Dataset.from_dict(columns)
    if len(dataset) < stage.batch_size:
        raise PcctuneError(f"stage {stage.name!r}: {len(dataset)} examples, fewer than batch_size {stage.batch_size}")
    return dataset


def dev_pairs(kind: str, senteval_dir: Path) -> list[STSPair]:
    """Checkpoint-selection pairs minus every pair found in a test set (both orders).

    ``sick-trial``: SICK's trial split (491 of 500 pairs are in no test set; 9 are in SICK-R test);
    ``stsb-dev-filtered``: STS-B dev (369 of 1,500 pairs are in no test set).
    """
    loaders = {"sick-trial": lambda: load_sick(senteval_dir, "dev"), "stsb-dev-filtered": lambda: load_stsb(senteval_dir, "dev")}
    if kind not in loaders:
        raise PcctuneError(f"unknown dev set {kind!r}")
    kept, _ = LeakageFilter(load_test_tasks(senteval_dir)).filter(kind, loaders[kind]().pairs)
    return kept


def dev_evaluator(kind: str, senteval_dir: Path) -> EmbeddingSimilarityEvaluator | None:
    if kind == "none":
        return None
    pairs = dev_pairs(kind, senteval_dir)
    return EmbeddingSimilarityEvaluator(
        [p.sentence1 for p in pairs], [p.sentence2 for p in pairs], [p.score for p in pairs],
        batch_size=64, main_similarity="cosine", name=kind, write_csv=False,
    )
