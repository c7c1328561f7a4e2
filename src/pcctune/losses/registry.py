"""The registry of stage losses: name → class, the data each one trains on, and its label scale.

Configs, the CLI's choices, the training data builder, benchmarks and docs draw loss names from
``LOSSES``; nothing else lists them.

- ``data``: ``triplets`` (anchor, positive[, negative]), ``scored`` (sentence1, sentence2,
  score), ``positives`` (scored pairs above a threshold become anchor/positive pairs, the
  stage-2 contrastive baseline of Pcc-tuning §4.3) or ``preferences`` (x1, x2 ≻ x3, x4).
- ``labels``: ``none``, ``raw`` (the score as read), ``unit`` (score ÷ the set's maximum, for
  losses that regress the cosine itself), ``class`` (the rounded score as a class index) or
  ``raw_source`` (score and source id: 0 STS-B or a user's file, 1 SICK).
- ``sentence_transformers``: the nearest sentence-transformers loss and what differs (docs/losses.md, the loss
  guide, is generated from these entries).

``RENAMED`` keeps the earlier names of four losses (``contrastive``, ``ce``, ``mse``, ``l1``) working, with a
warning: configs, ``--compare`` and ``loss_spec`` read them as the current names.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

from sentence_transformers.sentence_transformer import losses as st_losses
from torch import nn

from pcctune.errors import unknown
from pcctune.losses.dpo import EmbeddingDPOLoss
from pcctune.losses.infonce import InfoNCELoss
from pcctune.losses.pearson import PearsonLoss
from pcctune.losses.pearson_by_source import SourcePearsonLoss
from pcctune.losses.pearson_plus import PearsonPlusLoss
from pcctune.losses.regression import RegressionLoss
from pcctune.losses.soft_spearman import SoftSpearmanLoss

DataKind = Literal["triplets", "scored", "positives", "preferences"]
LabelScale = Literal["none", "raw", "unit", "class", "raw_source"]


@dataclass(frozen=True)
class LossSpec:
    """One loss of the registry: its name, class, training data and labels, what it is, and how it stands to the
    nearest sentence-transformers loss."""

    name: str
    cls: type[nn.Module]
    data: DataKind
    labels: LabelScale
    summary: str
    sentence_transformers: str
    """The nearest sentence-transformers loss and what differs, or why there is none."""
    variant: str | None = None
    """The variant of ``cls`` the name selects: a regression penalty, or the second term of Pearson + λ · term."""


_MNRL = "`MultipleNegativesRankingLoss`"
_SAME = "the same loss"
_NO_ST = "none: sentence-transformers has no correlation loss"
_REGRESSION = "none: `SoftmaxLoss` puts the same (u, v, abs(u−v)) head on a pair, but classifies"
_PENALTIES = {
    "regression_l1": ("l1", "x = abs(prediction − label)"),
    "regression_mse": ("mse", "x²"),
    "translated_relu": ("translated_relu", "max(0, k(x − x₀)), a zero-gradient zone below x₀ (eq. 1)"),
    "smooth_k2": ("smooth_k2", "k(x − x₀)² for x ≥ x₀, else 0 (eq. 2)"),
}
_SPECS = (
    LossSpec(
        "infonce",
        InfoNCELoss,
        "triplets",
        "none",
        "InfoNCE with hard negatives (Pcc-tuning eq. 7), stage 1",
        f"{_MNRL} with `scale` = 1/τ = 20: {_SAME}; candidates gathered from every process by default",
    ),
    LossSpec(
        "pearson",
        PearsonLoss,
        "scored",
        "raw",
        "1 − Pearson(cos, gold) over the global batch (eq. 8)",
        f"{_NO_ST}; `CoSENTLoss` and `CosineSimilarityLoss` train on the same pairs",
    ),
    LossSpec(
        "pearson_by_source",
        SourcePearsonLoss,
        "scored",
        "raw_source",
        "Pearson within each source (STS-B, SICK) of the group",
        _NO_ST,
    ),
    LossSpec(
        "pearson_mse",
        PearsonPlusLoss,
        "scored",
        "raw",
        "1 − Pearson + λ · MSE of cos vs gold / the set's largest score",
        "none; its second term is `CosineSimilarityLoss`",
        variant="mse",
    ),
    LossSpec(
        "pearson_cosent",
        PearsonPlusLoss,
        "scored",
        "raw",
        "1 − Pearson + λ · CoSENT",
        "none; its second term is `CoSENTLoss`",
        variant="cosent",
    ),
    LossSpec(
        "soft_spearman",
        SoftSpearmanLoss,
        "scored",
        "raw",
        "1 − Pearson of soft ranks (Blondel et al. 2020)",
        _NO_ST,
    ),
    LossSpec(
        "infonce_positives",
        InfoNCELoss,
        "positives",
        "none",
        "InfoNCE, in-batch negatives, on the pairs scored above a threshold (Pcc-tuning §4.3's contrastive baseline)",
        f"{_MNRL} on (anchor, positive) pairs; not `ContrastiveLoss`, a margin loss on pairs labelled 1 or 0",
    ),
    *(
        LossSpec(
            name,
            RegressionLoss,
            "scored",
            "raw",
            f"regression head on (u, v, abs(u−v)); penalty {formula}",
            _REGRESSION,
            variant=penalty,
        )
        for name, (penalty, formula) in _PENALTIES.items()
    ),
    LossSpec(
        "cosent", st_losses.CoSENTLoss, "scored", "raw", "CoSENT: pairs ranked by cosine as by gold", "`CoSENTLoss`"
    ),
    LossSpec("angle", st_losses.AnglELoss, "scored", "raw", "AnglE: CoSENT on angle differences", "`AnglELoss`"),
    LossSpec(
        "cosine_mse",
        st_losses.CosineSimilarityLoss,
        "scored",
        "unit",
        "MSE of the cosine against the score ÷ the set's maximum",
        "`CosineSimilarityLoss`, the scores scaled to 0–1",
    ),
    LossSpec(
        "softmax_classifier",
        st_losses.SoftmaxLoss,
        "scored",
        "class",
        "softmax classifier on (u, v, abs(u−v)), the rounded score as its class",
        "`SoftmaxLoss` (SBERT's NLI loss); its classes are the rounded scores",
    ),
    LossSpec(
        "dpo",
        EmbeddingDPOLoss,
        "preferences",
        "none",
        "embedding DPO against a cross-encoder (PromptEOL §3.3)",
        "none: sentence-transformers has no preference loss",
    ),
)
LOSSES: dict[str, LossSpec] = {spec.name: spec for spec in _SPECS}
RENAMED: dict[str, str] = {
    "contrastive": "infonce_positives",
    "ce": "softmax_classifier",
    "mse": "regression_mse",
    "l1": "regression_l1",
}
"""Earlier loss names → their current names. An earlier name still works, with a ``FutureWarning``: ``contrastive``
read as sentence-transformers' margin ``ContrastiveLoss``, ``ce`` and ``mse`` as any cross-entropy or MSE loss."""


def resolve_loss(name: str) -> str:
    """The current name of loss ``name`` (an earlier name, ``RENAMED``, gives its new one); ``ValueError`` for a
    name that is neither."""
    current = RENAMED.get(name, name)
    if current not in LOSSES:
        raise ValueError(unknown("loss", name, list(LOSSES)))
    return current


def warn_if_renamed(name: str) -> None:
    """A ``FutureWarning`` for an earlier loss name, saying the name to use."""
    if name in RENAMED:
        warnings.warn(
            f"loss {name!r} is now called {RENAMED[name]!r}; the old name still works but will be removed",
            FutureWarning,
            stacklevel=3,
        )


def loss_spec(name: str) -> LossSpec:
    """The registry entry of loss ``name`` (a current or an earlier name)."""
    return LOSSES[resolve_loss(name)]


def losses_markdown() -> str:
    """The registry as a markdown table, as docs/losses.md shows it (``docs/gen_losses.py`` writes it there)."""
    lines = [
        "| loss | trains on | labels | what it is | sentence-transformers |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{s.name}` | {s.data} | {s.labels} | {s.summary} | {s.sentence_transformers} |" for s in LOSSES.values()
    ]
    return "\n".join(lines)


def renamed_markdown() -> str:
    """The earlier loss names and their current ones, as a markdown table (docs/losses.md)."""
    lines = ["| earlier name | current name |", "| --- | --- |"]
    lines += [f"| `{old}` | `{new}` |" for old, new in RENAMED.items()]
    return "\n".join(lines)
