"""Transfer tasks: a logistic-regression probe on frozen sentence embeddings, one of two.

``senteval``: SentEval's own PyTorch probe, the numbers of the papers' transfer tables
(``pcctune.evaluation.senteval_probe``). ``sklearn`` (the default, about seventy times faster:
``reproductions/transfer_probe/``): as SentEval with its scikit-learn classifier: L2-regularised logistic
regression with C chosen from {2⁻², …, 2³}. MR, CR, SUBJ and MPQA: 10-fold stratified cross-validation (C chosen by an
inner 5-fold search on each training fold). SST2: C chosen on the dev split, accuracy on test.
TREC and MRPC: C chosen by inner 5-fold search on train, accuracy on test (and F1 for MRPC).
MRPC pairs are represented as [u, v, |u−v|, u·v] (SentEval itself uses [|u−v|, u·v]).
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from sentence_transformers import SentenceTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from pcctune.data.transfer import TransferTask
from pcctune.evaluation import senteval_probe
from pcctune.evaluation.protocols import senteval_text
from pcctune.modeling.encoding import encode_unique
from pcctune.modeling.vector_store import VectorStore
from pcctune.results import TransferScore

REGULARIZATION_GRID = [2.0**t for t in range(-2, 4)]
PROBE_SEED = senteval_probe.SEED
"""SentEval's seed, for either probe: the ``sklearn`` probe's cross-validation folds (another seed reads the same
vectors a little differently: the probe's own noise)."""
Probe = Literal["sklearn", "senteval"]
PROBES: tuple[Probe, ...] = get_args(Probe)
DEFAULT_PROBE: Probe = "sklearn"
MAX_ITERATIONS = 2000
"""The logistic regression's solver iterations, every probe fit alike."""


def _search(seed: int, folds: int = 5) -> GridSearchCV:
    return GridSearchCV(
        LogisticRegression(max_iter=MAX_ITERATIONS),
        {"C": REGULARIZATION_GRID},
        cv=StratifiedKFold(folds, shuffle=True, random_state=seed),
    )


def cross_validated_accuracy(
    features: np.ndarray, labels: np.ndarray, seed: int, folds: int = senteval_probe.FOLDS
) -> float:
    """Mean test accuracy of SentEval's k-fold CV (10 folds), C picked by an inner search on each training part."""
    scores = []
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(features, labels):
        search = _search(seed).fit(features[train], labels[train])
        scores.append(search.score(features[test], labels[test]))
    return float(np.mean(scores))


def dev_selected_predictions(
    train: tuple[np.ndarray, np.ndarray], dev: tuple[np.ndarray, np.ndarray], test_x: np.ndarray
) -> np.ndarray:
    """Fit on train for every C, keep the best on dev, predict test."""
    best = max(
        (LogisticRegression(C=c, max_iter=MAX_ITERATIONS).fit(*train) for c in REGULARIZATION_GRID),
        key=lambda clf: clf.score(*dev),
    )
    return best.predict(test_x)


def _features(
    task: TransferTask, split: str, vectors: dict[str, np.ndarray], probe: Probe
) -> tuple[np.ndarray, np.ndarray]:
    """A split's features and labels; MRPC pairs as [u, v, |u−v|, u·v], or SentEval's [|u−v|, u·v]. The
    senteval probe gets its training rows in SentEval's order (``senteval_probe.senteval_order``); test rows
    keep the task's order, which its labels are scored in."""
    texts, labels = task.splits[split]
    if probe == "senteval" and split != "test":
        order = senteval_probe.senteval_order(texts, labels)
        texts, labels = [texts[i] for i in order], [labels[i] for i in order]
    if task.name == "MRPC":
        u = np.stack([vectors[senteval_text(a)] for a, _ in texts])
        v = np.stack([vectors[senteval_text(b)] for _, b in texts])
        x = np.concatenate([np.abs(u - v), u * v] if probe == "senteval" else [u, v, np.abs(u - v), u * v], axis=1)
    else:
        x = np.stack([vectors[senteval_text(t)] for t in texts])
    return x, np.array(labels)


def transfer_sentences(task: TransferTask) -> list[str]:
    """Every sentence of a task's splits (MRPC: both sides of each pair) as SentEval sees it."""
    out: list[str] = []
    for texts, _ in task.splits.values():
        for item in texts:
            out.extend(item if isinstance(item, tuple) else (item,))
    return [senteval_text(s) for s in out]


def _test_predictions(task: TransferTask, vectors: dict[str, np.ndarray], seed: int, probe: Probe) -> np.ndarray:
    """A split task's test predictions: the regularisation chosen on dev (SST2) or by CV on train (TREC, MRPC)."""
    train, test_x = _features(task, "train", vectors, probe), _features(task, "test", vectors, probe)[0]
    dev = _features(task, "dev", vectors, probe) if "dev" in task.splits else None
    if probe == "senteval":
        if dev is not None:
            return senteval_probe.dev_selected_predictions(train, dev, test_x)
        return senteval_probe.train_test_predictions(train, test_x)
    return (
        dev_selected_predictions(train, dev, test_x) if dev is not None else _search(seed).fit(*train).predict(test_x)
    )


def score_transfer_task(
    task: TransferTask, vectors: dict[str, np.ndarray], seed: int = PROBE_SEED, probe: Probe = DEFAULT_PROBE
) -> TransferScore:
    """One task's test accuracy (MRPC: and F1) under ``probe``."""
    if "all" in task.splits:
        x, y = _features(task, "all", vectors, probe)
        accuracy = (
            senteval_probe.nested_cv_accuracy(x, y)
            if probe == "senteval"
            else cross_validated_accuracy(x, y, seed) * 100
        )
        return TransferScore(name=task.name, accuracy=accuracy, n_test=len(y))
    test_y = np.array(task.splits["test"][1])
    predictions = _test_predictions(task, vectors, seed, probe)
    f1 = f1_score(test_y, predictions) * 100 if task.name == "MRPC" else None
    return TransferScore(name=task.name, accuracy=accuracy_score(test_y, predictions) * 100, n_test=len(test_y), f1=f1)


def evaluate_transfer(
    model: SentenceTransformer,
    tasks: list[TransferTask],
    token_budget: int | None = None,
    seed: int = PROBE_SEED,
    show_progress: bool = True,
    probe: Probe = DEFAULT_PROBE,
    store: VectorStore | None = None,
) -> list[TransferScore]:
    """Encode each task's unique sentences once (kept in ``store`` as they are, when given) and probe them with
    ``probe``."""
    scores = []
    for task in tasks:
        sentences = transfer_sentences(task)
        vectors = encode_unique(model, sentences, token_budget=token_budget, show_progress=show_progress, store=store)
        scores.append(score_transfer_task(task, vectors, seed, probe))
    return scores
