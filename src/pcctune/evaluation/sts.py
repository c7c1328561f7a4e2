"""STS evaluation as the SimCSE fork of SentEval computes it, under a named protocol.

What the SimCSE fork of SentEval computes, and so what the Pcc-tuning and PromptEOL papers
report: each sentence is prepared by the protocol (``pcctune.evaluation.protocols``), each
pair is scored by cosine similarity, and the metric is Spearman's ρ × 100
(``scipy.stats.spearmanr``, ties averaged):

- STS12–16: ρ on the concatenation of all subsets (``all``); per-subset ρ, their mean and
  their pair-count-weighted mean (``wmean``) are recorded too;
- STS-B and SICK-R: ρ on the test split;
- ``avg``: the plain mean of the seven numbers, recorded only where all seven were scored
  (`score_section`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Unpack

import numpy as np
from sentence_transformers import SentenceTransformer

from pcctune.correlation import correlation, pair_cosines
from pcctune.data.sts import STSTask
from pcctune.data.tasks import SEVEN_TASKS
from pcctune.errors import PcctuneError
from pcctune.evaluation.interval import bootstrap_interval
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, get_protocol, senteval_text
from pcctune.modeling.encoding import EncodeOptions, encode_unique
from pcctune.modeling.template import model_template
from pcctune.results import SubsetScore, TaskScore


def score_task(
    task: STSTask,
    vectors: dict[str, np.ndarray],
    all_subsets: bool,
    text_of: Callable[[str], str] = senteval_text,
    interval_seed: int | None = None,
) -> TaskScore:
    """Score one task from precomputed vectors (keyed by ``text_of(sentence)``); ``all_subsets``: the STS12–16 rule;
    with ``interval_seed``, also the bootstrap interval of its score (``pcctune.evaluation.interval``)."""
    subset_scores: list[SubsetScore] = []
    all_cos, all_gold = [], []
    for subset in task.subsets:
        cos, gold = pair_cosines(vectors, subset.pairs, text_of)
        r = correlation(cos, gold)
        subset_scores.append(
            SubsetScore(name=subset.name, n=len(gold), spearman=r.spearman * 100, pearson=r.pearson * 100)
        )
        all_cos.append(cos)
        all_gold.append(gold)
    r = correlation(np.concatenate(all_cos), np.concatenate(all_gold))
    n = sum(s.n for s in subset_scores)
    score = TaskScore(name=task.name, n=n, spearman=r.spearman * 100, pearson=r.pearson * 100, subsets=subset_scores)
    if interval_seed is not None:
        score.interval = bootstrap_interval(np.concatenate(all_cos), np.concatenate(all_gold), interval_seed)
    if all_subsets:
        score.mean = float(np.mean([s.spearman for s in subset_scores]))
        score.wmean = float(sum(s.spearman * s.n for s in subset_scores) / n)
    return score


def score_section(scores: Sequence[TaskScore], own_pairs: bool = False) -> dict[str, float]:
    """A record's STS numbers: each task's Spearman × 100, rounded to 4 places, and ``avg``, their mean, only where
    ``scores`` are the seven tasks in their order: the mean of some of them, or of a user's own test sets
    (``own_pairs``), would read as the seven-task average the papers report.

    >>> from pcctune.results import TaskScore
    >>> score_section([TaskScore(name="STS12", n=3108, spearman=71.25, pearson=70.5)])
    {'STS12': 71.25}
    """
    section = {score.name: round(score.spearman, 4) for score in scores}
    if tuple(section) == SEVEN_TASKS and not own_pairs:
        section["avg"] = round(float(np.mean([score.spearman for score in scores])), 4)
    return section


def check_loaded_model(model: object, what: str = "this") -> None:
    """Refuse, in one line, a model given as its name or path where a loaded ``SentenceTransformer`` is scored."""
    if not isinstance(model, SentenceTransformer):
        raise PcctuneError(
            f"{what} scores a loaded model, not a {type(model).__name__}; load it first, e.g. with pcctune.build_model"
        )


def evaluate_sts(
    model: SentenceTransformer,
    tasks: Sequence[STSTask],
    protocol: str = DEFAULT_PROTOCOL,
    interval_seed: int | None = None,
    shard: bool = True,
    **options: Unpack[EncodeOptions],
) -> tuple[list[TaskScore], float]:
    """Evaluate ``tasks`` under ``protocol`` (``options``: the encoding's); returns per-task scores and their mean.
    With ``interval_seed``, each score carries its bootstrap interval, resampled by a generator of that seed. Under
    DDP every process must call it with ``shard`` (each encodes its share); an evaluator the trainer runs on rank 0
    alone passes ``shard=False``.

    The protocol's sentence edits follow the model's template wherever it lives (pcctune's input module or the
    chat template of a model saved as plain sentence-transformers)."""
    check_loaded_model(model)
    vectors, text_of = encode_tasks(model, tasks, protocol, shard, **options)
    scores = [score_task(task, vectors, len(task.subsets) > 1, text_of, interval_seed) for task in tasks]
    undefined = [score.name for score in scores if not math.isfinite(score.spearman)]
    if undefined:
        raise PcctuneError(
            f"the model's cosines on {', '.join(undefined)} have no correlation with the gold scores (they are NaN or "
            "all equal): its embeddings are not finite or do not vary, as after a diverged or collapsed training"
        )
    return scores, float(np.mean([s.spearman for s in scores]))


def encode_tasks(
    model: SentenceTransformer,
    tasks: Sequence[STSTask],
    protocol: str = DEFAULT_PROTOCOL,
    shard: bool = True,
    **options: Unpack[EncodeOptions],
) -> tuple[dict[str, np.ndarray], Callable[[str], str]]:
    """The vectors of every sentence of ``tasks`` as ``protocol`` prepares it for ``model``, keyed by
    ``text_of(sentence)``, and that ``text_of`` (``shard``: ``encode_unique``'s)."""
    template = model_template(model)
    spec = get_protocol(protocol)
    spec.check_model(template)
    templated = template is not None

    def text_of(sentence: str) -> str:
        return spec.prepare(sentence, templated)

    sentences = [text_of(s) for t in tasks for p in t.pairs for s in (p.sentence1, p.sentence2)]
    return encode_unique(model, sentences, shard=shard, **options), text_of


def task_cosines(
    model: SentenceTransformer,
    tasks: Sequence[STSTask],
    protocol: str = DEFAULT_PROTOCOL,
    **options: Unpack[EncodeOptions],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each task's pair cosines and gold scores, all its subsets in order (the pairs its score is computed on):
    what a paired bootstrap over the test pairs resamples (``pcctune.evaluation.compare``)."""
    vectors, text_of = encode_tasks(model, tasks, protocol, **options)
    return [pair_cosines(vectors, task.pairs, text_of) for task in tasks]
