"""The registry of stage losses: name → class, the data each one trains on, and its label scale.

Configs, the CLI's choices, the training data builder, benchmarks and docs draw loss names from
``LOSSES``; nothing else lists them.

- ``data``: ``triplets`` (anchor, positive[, negative]), ``scored`` (sentence1, sentence2,
  score), ``positives`` (scored pairs above a threshold become anchor/positive pairs, the
  stage-2 contrastive baseline of Pcc-tuning §4.3) or ``preferences`` (x1, x2 ≻ x3, x4).
- ``labels``: ``none``, ``raw`` (the score as read), ``unit`` (score ÷ the set's maximum, for
  losses that regress the cosine itself), ``class`` (the rounded score as a class index) or
  ``raw_source`` (score and source id: 0 STS-B or a user's file, 1 SICK).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sentence_transformers.sentence_transformer import losses as st_losses
from torch import nn

from pcctune.losses.dpo import EmbeddingDPOLoss
from pcctune.losses.infonce import InfoNCELoss
from pcctune.losses.pearson import PearsonLoss
from pcctune.losses.pearson_by_source import SourcePearsonLoss
from pcctune.losses.pearson_plus import PearsonPlusLoss
from pcctune.losses.regression import PENALTIES, RegressionLoss
from pcctune.losses.soft_spearman import SoftSpearmanLoss

DataKind = Literal["triplets", "scored", "positives", "preferences"]
LabelScale = Literal["none", "raw", "unit", "class", "raw_source"]


@dataclass(frozen=True)
class LossSpec:
    name: str
    cls: type[nn.Module]
    data: DataKind
    labels: LabelScale
    summary: str


_SPECS = (
    LossSpec("infonce", InfoNCELoss, "triplets", "none", "InfoNCE with hard negatives (Pcc-tuning eq. 7), stage 1"),
    LossSpec("pearson", PearsonLoss, "scored", "raw", "1 − Pearson(cos, gold) over the global batch (eq. 8)"),
    LossSpec(
        "pearson_by_source",
        SourcePearsonLoss,
        "scored",
        "raw_source",
        "Pearson within each source (STS-B, SICK) of the group",
    ),
    LossSpec("pearson_mse", PearsonPlusLoss, "scored", "raw", "1 − Pearson + λ · MSE of cos vs gold / 5"),
    LossSpec("pearson_cosent", PearsonPlusLoss, "scored", "raw", "1 − Pearson + λ · CoSENT"),
    LossSpec("soft_spearman", SoftSpearmanLoss, "scored", "raw", "1 − Pearson of soft ranks (Blondel et al. 2020)"),
    LossSpec("contrastive", InfoNCELoss, "positives", "none", "stage-2 contrastive baseline: pairs above a threshold"),
    *(
        LossSpec(name, RegressionLoss, "scored", "raw", f"regression head on u, v, abs(u−v); {name} penalty")
        for name in PENALTIES
    ),
    LossSpec("cosent", st_losses.CoSENTLoss, "scored", "raw", "sentence-transformers' CoSENTLoss"),
    LossSpec("angle", st_losses.AnglELoss, "scored", "raw", "sentence-transformers' AnglELoss"),
    LossSpec(
        "cosine_mse", st_losses.CosineSimilarityLoss, "scored", "unit", "sentence-transformers' CosineSimilarityLoss"
    ),
    LossSpec("ce", st_losses.SoftmaxLoss, "scored", "class", "sentence-transformers' SoftmaxLoss on rounded scores"),
    LossSpec("dpo", EmbeddingDPOLoss, "preferences", "none", "embedding DPO against a cross-encoder (PromptEOL §3.3)"),
)
LOSSES: dict[str, LossSpec] = {spec.name: spec for spec in _SPECS}


def loss_spec(name: str) -> LossSpec:
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; choose from {', '.join(LOSSES)}")
    return LOSSES[name]


def losses_markdown() -> str:
    """The registry as a markdown table, as docs/losses.md shows it (a test keeps them equal)."""
    lines = ["| loss | trains on | labels | what it is |", "| --- | --- | --- | --- |"]
    lines += [f"| `{s.name}` | {s.data} | {s.labels} | {s.summary} |" for s in LOSSES.values()]
    return "\n".join(lines)
