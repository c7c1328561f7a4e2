"""SentEval's own transfer probe (Conneau & Kiela 2018, ``senteval/tools``): the numbers the papers' transfer
tables report (Pcc-tuning v1 draft, SimCSE Table 2, PromptEOL), reimplemented on its published settings.

The classifier is SentEval's PyTorch logistic regression (``nhid: 0``) with the configuration every one of those
papers used: Adam (learning rate 1e-3) with the L2 penalty as weight decay, batch 64, each "epoch" four passes
over the training set, at most 200 epochs, early stopping on a validation set after ``tenacity`` = 5 epochs
without a new best (the count is never reset, as in SentEval), the best epoch's weights kept; seed 1111 for the
initialisation and every shuffle. The L2 grid is {1e-5, 1e-4, 1e-3, 1e-2}. Three validation schemes:

- MR, CR, SUBJ, MPQA (one labelled set): 10-fold stratified cross-validation; in each training part, the L2
  value is chosen by an inner 10-fold search (each inner fit stops early on its held-out fold), then the probe is
  refit on the whole part (5 % held out for early stopping) and scored on the outer fold; the mean accuracy.
- SST-2 (train / dev / test): each L2 value fit on train, stopped and chosen on dev; the chosen one scored on test.
- TREC, MRPC (train / test): the L2 value chosen by 10-fold cross-validation on train, then refit on all of train
  (5 % held out) and scored on test. MRPC pairs are represented as [|u − v|, u·v] and also get their F1.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold
from torch import nn

L2_GRID = [10.0**t for t in range(-5, -1)]
SEED = 1111
FOLDS = 10


@dataclass(frozen=True)
class ProbeSettings:
    """SentEval's classifier configuration (``params['classifier']`` in its examples and in the papers')."""

    batch_size: int = 64
    tenacity: int = 5
    epoch_size: int = 4
    max_epoch: int = 200
    learning_rate: float = 1e-3


class LogisticRegressionProbe:
    """SentEval's ``MLP`` with ``nhid: 0``: a linear layer trained with cross-entropy, Adam and early stopping."""

    def __init__(self, dim: int, classes: int, l2: float, settings: ProbeSettings, seed: int = SEED) -> None:
        self.settings = settings
        self.rng = np.random.RandomState(seed)  # SentEval seeds numpy's global generator here
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.model = nn.Linear(dim, classes)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=settings.learning_rate, weight_decay=l2)

    def _split(self, x: np.ndarray, y: np.ndarray, held_out: float) -> tuple[np.ndarray, ...]:
        order = self.rng.permutation(len(x))
        cut = int(held_out * len(x))
        return x[order[cut:]], y[order[cut:]], x[order[:cut]], y[order[:cut]]

    def _epoch(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.model.train()
        for _ in range(self.settings.epoch_size):
            order = torch.from_numpy(self.rng.permutation(len(x)))
            for start in range(0, len(x), self.settings.batch_size):
                batch = order[start : start + self.settings.batch_size]
                loss = nn.functional.cross_entropy(self.model(x[batch]), y[batch])
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        validation: tuple[np.ndarray, np.ndarray] | None = None,
        held_out: float = 0.05,
    ) -> float:
        """Train until the validation accuracy has not improved ``tenacity`` times; keep the best epoch."""
        train_x, train_y, dev_x, dev_y = (x, y, *validation) if validation is not None else self._split(x, y, held_out)
        tx, ty = torch.as_tensor(train_x, dtype=torch.float32), torch.as_tensor(train_y, dtype=torch.int64)
        best, best_state, misses, epoch = -1.0, None, 0, 0
        while epoch <= self.settings.max_epoch:
            self._epoch(tx, ty)
            epoch += self.settings.epoch_size
            accuracy = self.score(dev_x, dev_y)
            if accuracy > best:
                best, best_state = accuracy, copy.deepcopy(self.model.state_dict())
            elif misses >= self.settings.tenacity:
                break
            else:
                misses += 1
        self.model.load_state_dict(best_state or self.model.state_dict())
        return best

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The class of each row of ``x``: the argmax of the probe's logits."""
        self.model.eval()
        with torch.no_grad():
            return self.model(torch.as_tensor(x, dtype=torch.float32)).argmax(1).numpy()

    def score(self, x: np.ndarray, y: np.ndarray) -> float:
        """The accuracy of ``predict`` on ``x`` against the labels ``y``."""
        return float((self.predict(x) == y).mean())


def senteval_order(texts: list, labels: list[int]) -> list[int]:
    """The row order in which SentEval hands a split to its classifier: sorted, stably, by word count and then
    label (MRPC: the first sentence's count, the second's, then the label) — the "sort to reduce padding" of its
    ``binary.py``, ``sst.py``, ``trec.py`` and ``mrpc.py``. Its folds and seeded shuffles index rows in this
    order, so the same vectors in the same order give SentEval's folds and its numbers."""

    def key(row: int) -> tuple[int, ...]:
        item = texts[row]
        counts = [len(text.split()) for text in (item if isinstance(item, tuple) else (item,))]
        return (*counts, labels[row])

    return sorted(range(len(texts)), key=key)


def _classes(*labels: np.ndarray) -> int:
    return int(max(label.max() for label in labels)) + 1


def _folds(x: np.ndarray, y: np.ndarray, seed: int = SEED) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    return StratifiedKFold(FOLDS, shuffle=True, random_state=seed).split(x, y)


def cross_validated_l2(x: np.ndarray, y: np.ndarray, classes: int, settings: ProbeSettings) -> float:
    """The L2 value with the best mean held-out accuracy over 10 stratified folds (each fit stops on its fold)."""
    means = []
    for l2 in L2_GRID:
        scores = []
        for train, test in _folds(x, y):
            probe = LogisticRegressionProbe(x.shape[1], classes, l2, settings)
            probe.fit(x[train], y[train], validation=(x[test], y[test]))
            scores.append(probe.score(x[test], y[test]))
        means.append(round(100 * float(np.mean(scores)), 2))
    return L2_GRID[int(np.argmax(means))]


def nested_cv_accuracy(x: np.ndarray, y: np.ndarray, settings: ProbeSettings = ProbeSettings()) -> float:
    """MR / CR / SUBJ / MPQA: mean outer-fold accuracy, L2 chosen by an inner 10-fold search (SentEval's
    ``InnerKFoldClassifier``)."""
    classes, accuracies = _classes(y), []
    for train, test in _folds(x, y):
        l2 = cross_validated_l2(x[train], y[train], classes, settings)
        probe = LogisticRegressionProbe(x.shape[1], classes, l2, settings)
        probe.fit(x[train], y[train])
        accuracies.append(round(100 * probe.score(x[test], y[test]), 2))
    return float(np.mean(accuracies))


def train_test_predictions(
    train: tuple[np.ndarray, np.ndarray], test_x: np.ndarray, settings: ProbeSettings = ProbeSettings()
) -> np.ndarray:
    """TREC / MRPC: L2 chosen by 10-fold CV on train, refit on train, test predictions (``KFoldClassifier``)."""
    x, y = train
    l2 = cross_validated_l2(x, y, _classes(y), settings)
    probe = LogisticRegressionProbe(x.shape[1], _classes(y), l2, settings)
    probe.fit(x, y)
    return probe.predict(test_x)


def dev_selected_predictions(
    train: tuple[np.ndarray, np.ndarray],
    dev: tuple[np.ndarray, np.ndarray],
    test_x: np.ndarray,
    settings: ProbeSettings = ProbeSettings(),
) -> np.ndarray:
    """SST-2: every L2 value fit on train and stopped on dev; the best on dev predicts test (``SplitClassifier``)."""
    classes = _classes(train[1], dev[1])
    scores = []
    for l2 in L2_GRID:
        probe = LogisticRegressionProbe(train[0].shape[1], classes, l2, settings)
        probe.fit(*train, validation=dev)
        scores.append(round(100 * probe.score(*dev), 2))
    probe = LogisticRegressionProbe(train[0].shape[1], classes, L2_GRID[int(np.argmax(scores))], settings)
    probe.fit(*train, validation=dev)
    return probe.predict(test_x)
