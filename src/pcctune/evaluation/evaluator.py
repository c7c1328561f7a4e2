"""``PccEvaluator``: the seven STS test tasks under a named protocol, as a sentence-transformers evaluator.

Pass it as ``evaluator=`` to a ``SentenceTransformerTrainer`` to *report* the papers' numbers while training
(SimCSE-fork SentEval protocol: Spearman × 100 of cosine, STS12–16 on all subsets, plain mean of seven;
Pcc-tuning §4.1 names SentEval and Spearman, the rest is its authors' evaluation code: docs/fidelity.md). Do
not select checkpoints with it (``load_best_model_at_end``): that would choose on the test sets. Select on a dev
set instead (``DevSTSEvaluator``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
from typing_extensions import override

from pcctune.data.cache import senteval_folder
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, load_protocol_tasks
from pcctune.evaluation.sts import evaluate_sts


class PccEvaluator(SentenceEvaluator):
    """Scores a model on the seven STS test tasks; metrics ``sts_<TASK>`` and ``sts_avg`` (Spearman × 100).

    Args:
        data: SentEval folder (default: ``$PCCTUNE_DATA``, else the copy fetched into the cache).
        protocol: ``simcse-senteval``, ``paper`` or ``paper-prompt`` (docs/evaluation.md).
    """

    def __init__(self, data: str | Path | None = None, protocol: str = DEFAULT_PROTOCOL) -> None:
        super().__init__()
        self.protocol = protocol
        self.tasks = load_protocol_tasks(senteval_folder(data or None), protocol)
        self.primary_metric = "sts_avg"

    @override
    def __call__(
        self, model: Any, output_path: str | None = None, epoch: float = -1, steps: int = -1
    ) -> dict[str, float]:
        # the trainer runs an evaluator on rank 0 alone: no shard for the other processes to encode
        scores, avg = evaluate_sts(model, self.tasks, protocol=self.protocol, shard=False, show_progress=False)
        metrics = {f"sts_{score.name}": score.spearman for score in scores} | {"sts_avg": avg}
        self.store_metrics_in_model_card_data(model, metrics, int(epoch), steps)
        return metrics
