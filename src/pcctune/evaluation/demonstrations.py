"""Choosing an in-context demonstration on a dev set (PromptEOL §3.2, Table 4).

Candidates are built here, not downloaded: sentences from the filtered STS-B training pairs
(never a sentence that appears in a test set), each labelled with the word the model itself
predicts under the base template (``pcctune.modeling.demonstrations.predict_words``).
``search_demonstrations`` scores every candidate on a dev set that shares no pair with a
test set, and reports them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer
from tqdm.auto import tqdm

from pcctune.correlation import score_pairs
from pcctune.data.dev import size_weighted
from pcctune.data.leakage import TestIndex
from pcctune.data.senteval import load_stsb
from pcctune.data.sts import STSPair
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import senteval_text
from pcctune.modeling.demonstrations import Demonstration, demonstration_template, predict_words
from pcctune.modeling.encoding import encode_unique
from pcctune.modeling.template import Template, apply_template, model_template


def candidate_sentences(senteval_dir: Path, count: int, seed: int = 0) -> list[str]:
    """Up to ``count`` sentences of STS-B train that are no test sentence once normalized (the ``sentence`` level's
    check of the training data's filter, ``pcctune.data.leakage``)."""
    index = TestIndex(load_test_tasks(senteval_dir))
    train = load_stsb(senteval_dir, "train").pairs
    pool = sorted({s for p in train for s in (p.sentence1, p.sentence2) if not index.holds_sentence(s)})
    rng = np.random.default_rng(seed)
    return [pool[i] for i in rng.permutation(len(pool))[:count]]


@dataclass
class CandidateScore:
    """One in-context demonstration, the template it makes, and that template's dev Spearman × 100."""

    demonstration: Demonstration
    template: str
    dev_spearman: float


def dev_spearman(model: SentenceTransformer, parts: dict[str, list[STSPair]]) -> float:
    """Spearman × 100 of cosine similarity on a dev set (only): each single set scored on its own,
    then weighted by size, exactly as checkpoints are selected (``pcctune.data.dev.size_weighted``)."""
    texts = [senteval_text(s) for pairs in parts.values() for p in pairs for s in (p.sentence1, p.sentence2)]
    vectors = encode_unique(model, texts, show_progress=False)

    scores = {part: score_pairs(vectors, pairs, senteval_text).spearman for part, pairs in parts.items()}
    return size_weighted(scores, parts) * 100


def search_demonstrations(
    model: SentenceTransformer,
    demonstrations: list[Demonstration],
    dev: dict[str, list[STSPair]],
    base: str,
    known: Mapping[str, float] | None = None,
    on_scored: Callable[[str, float], None] | None = None,
) -> list[CandidateScore]:
    """Every candidate's dev score, best first; the base template alone is scored too (as ``word=''``).

    ``known`` maps a candidate's template to its dev score from an interrupted search of the same model and
    dev set (it is not scored again); ``on_scored(template, score)`` is told each new score as it lands."""
    original = model_template(model)
    known = known or {}
    results = []
    try:
        candidates = [(Demonstration("", ""), Template.parse(base).text)]
        candidates += [(d, demonstration_template(base, d)) for d in demonstrations]
        for demonstration, template in tqdm(candidates, desc="Demonstrations", unit="candidate"):
            if template in known:
                score = known[template]
            else:
                apply_template(model, template)
                score = dev_spearman(model, dev)
                if on_scored is not None:
                    on_scored(template, score)
            results.append(CandidateScore(demonstration, template, score))
    finally:
        apply_template(model, original)
    return sorted(results, key=lambda r: r.dev_spearman, reverse=True)


def rank_demonstrations(
    model: SentenceTransformer,
    senteval_dir: Path,
    count: int,
    seed: int,
    dev: dict[str, list[STSPair]],
    known: Mapping[str, float] | None = None,
    on_scored: Callable[[str, float], None] | None = None,
) -> list[CandidateScore]:
    """The whole search for ``model``'s current template: draw ``count`` candidate sentences, label
    each with the model's own word, score every candidate (and no demonstration) on ``dev``
    (``pcctune.data.dev.dev_parts``); ``known`` and ``on_scored`` as ``search_demonstrations``."""
    base = model_template(model)
    if base is None:
        raise PcctuneError("a demonstration is prepended to a template; give the model one (e.g. --template eol)")
    sentences = candidate_sentences(senteval_dir, count, seed)
    words = predict_words(model, sentences, base)
    demonstrations = [Demonstration(s, w) for s, w in zip(sentences, words, strict=True) if w]
    return search_demonstrations(model, demonstrations, dev, base, known, on_scored)
