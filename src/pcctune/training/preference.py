"""The preference model and preference data of embedding DPO (PromptEOL §3.3).

The preference model is a sentence-transformers ``CrossEncoder`` regressor, which reads both
sentences at once and so scores similarity better than an embedding model can. PromptEOL used
RoBERTa-large trained on STS-B train. pcctune trains one on the filtered stage-2 set (never on
a test pair), or loads any cross-encoder the user names.

Preferences are pairs of candidate sentence pairs ranked by the cross-encoder:
(x₁, x₂) ≻ (x₃, x₄) when score(x₁, x₂) − score(x₃, x₄) ≥ ``margin``. Candidates come from the
filtered STS training pairs or from NLI (premise, hypothesis) pairs. ``anchor`` sampling
compares two pairs that share their first sentence (the more informative case), ``random``
any two candidates.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from datasets import Dataset
from sentence_transformers import CrossEncoder

from pcctune.data.stage2 import SourcedPair
from pcctune.data.sts import STSPair
from pcctune.io import atomic_folder
from pcctune.seeding import DEFAULT_SEED, random_state_kept
from pcctune.training.checkpoints import CHECKPOINTS, FINAL
from pcctune.training.config import DPOConfig, PreferenceMode


@random_state_kept()
def train_preference_model(
    base: str,
    pairs: list[STSPair],
    output_dir: Path,
    epochs: float,
    batch_size: int = 16,
    learning_rate: float = 2e-5,
    seed: int = DEFAULT_SEED,
) -> CrossEncoder:
    """A cross-encoder regressor of score / max score, trained with binary cross-entropy (its trainer seeds the
    global random generators with ``seed``; the caller's states are put back)."""
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    top = max(p.score for p in pairs)
    dataset = Dataset.from_dict(
        {
            "sentence1": [p.sentence1 for p in pairs],
            "sentence2": [p.sentence2 for p in pairs],
            "label": [p.score / top for p in pairs],
        }
    )
    model = CrossEncoder(base, num_labels=1)
    args = CrossEncoderTrainingArguments(
        output_dir=str(output_dir / CHECKPOINTS),
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        warmup_steps=0.1,
        seed=seed,
        save_strategy="no",
        report_to="none",
        logging_steps=50,
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    CrossEncoderTrainer(model=model, args=args, train_dataset=dataset, loss=BinaryCrossEntropyLoss(model)).train()
    with atomic_folder(output_dir / FINAL) as staging:  # a complete folder or none
        model.save(str(staging))
    return model


@dataclass(frozen=True)
class Preference:
    """A ranked preference (PromptEOL §3.3): the pair (x1, x2) is more similar than (x3, x4) by at least ``margin``
    of the preference model's score."""

    x1: str
    x2: str
    x3: str
    x4: str
    margin: float


def sample_preferences(
    scorer: CrossEncoder,
    candidates: list[tuple[str, str]],
    count: int,
    margin: float,
    mode: PreferenceMode,
    seed: int = DEFAULT_SEED,
    batch_size: int = 64,
) -> list[Preference]:
    """``count`` preferences among ``candidates``, ranked by ``scorer`` with at least ``margin`` between them."""
    scores = scorer.predict(candidates, batch_size=batch_size, show_progress_bar=True)
    rng = random.Random(seed)
    if mode == "anchor":
        groups: dict[str, list[int]] = {}
        for index, (first, _) in enumerate(candidates):
            groups.setdefault(first, []).append(index)
        pools = [members for members in groups.values() if len(members) > 1]
        if not pools:
            raise ValueError("anchor sampling needs candidates that share a first sentence")

        def draw() -> list[int]:
            return rng.sample(rng.choice(pools), 2)
    else:

        def draw() -> list[int]:
            return rng.sample(range(len(candidates)), 2)

    preferences: list[Preference] = []
    attempts = 0
    while len(preferences) < count and attempts < count * 50:
        attempts += 1
        a, b = draw()
        if scores[a] < scores[b]:
            a, b = b, a
        gap = float(scores[a] - scores[b])
        if gap >= margin:
            preferences.append(Preference(*candidates[a], *candidates[b], gap))
    return preferences


def preference_dataset(preferences: list[Preference]) -> Dataset:
    """Columns x1, x2 (preferred pair), x3, x4 (rejected pair) for ``EmbeddingDPOLoss``."""
    return Dataset.from_dict({k: [getattr(p, k) for p in preferences] for k in ("x1", "x2", "x3", "x4")})


def dpo_dataset(
    dpo: DPOConfig,
    scored: Sequence[STSPair | SourcedPair],
    candidates: Sequence[tuple[str, str]],
    stage_dir: Path,
    seed: int,
) -> Dataset:
    """Preferences among ``candidates`` (sentence pairs, through the stage's leakage filter) ranked by a
    cross-encoder (trained on the stage's scored pairs, also filtered, unless one is given)."""
    from pcctune.modeling.build import resolve_source

    stage2 = [STSPair(p.sentence1, p.sentence2, p.score) for p in scored]
    if dpo.preference_model:
        scorer = CrossEncoder(dpo.preference_model)
    else:
        scorer = train_preference_model(
            resolve_source(dpo.preference_base).path,
            stage2,
            stage_dir / "preference_model",
            epochs=dpo.preference_epochs,
            seed=seed,
        )
    preferences = sample_preferences(scorer, list(candidates), dpo.count, dpo.margin, dpo.mode, seed)
    return preference_dataset(preferences)
