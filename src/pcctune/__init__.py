"""pcctune: train and evaluate sentence embeddings past the contrastive ceiling on STS.

Implements Pcc-tuning (two-stage contrastive + Pearson-loss training), prompt-based decoder embeddings
(PromptEOL/STH/SUM), and the SimCSE/SentEval STS evaluation protocol on top of sentence-transformers.
The names below are the stable Python API (semantic versioning of ``__version__``); they fit into a plain
``SentenceTransformerTrainer`` script. Pcc-tuning's stage 2 of all-MiniLM-L6-v2, offline (its weights are the
``pcctune[minilm]`` package's; the STS data is ``$PCCTUNE_DATA``'s or the copy fetched on first use), with the
batch settings of ``configs/minilm_stage2.yaml``:

    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    import pcctune

    model = pcctune.build_model("all-MiniLM-L6-v2")
    args = SentenceTransformerTrainingArguments(
        output_dir="runs/stage2", per_device_train_batch_size=32, dataloader_drop_last=True,
        num_train_epochs=2, learning_rate=8.5e-05, warmup_steps=0.1,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=pcctune.stage2_dataset(), loss=pcctune.PearsonLoss(model)
    )
    trainer.train()
    print(pcctune.evaluate(model).sts["avg"])

The batch is the group the Pearson loss correlates over: keep it large (the trainer's default is 8) and drop the
last, short batch; the dev selection the recipe adds: ``DevSTSEvaluator``.

Names load on first use, so ``import pcctune`` (and the CLI) stays fast.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

from pcctune.errors import PcctuneError
from pcctune.known_noise import known_noise_dropped

__version__ = importlib.metadata.version("pcctune")  # the one copy lives in pyproject.toml

_EXPORTS: dict[str, str] = {
    # losses (sentence-transformers losses; mini_batch_size=N is the cached, GradCache variant)
    "PearsonLoss": "pcctune.losses.pearson",
    "InfoNCELoss": "pcctune.losses.infonce",
    "PearsonPlusLoss": "pcctune.losses.pearson_plus",
    "SourcePearsonLoss": "pcctune.losses.pearson_by_source",
    "SoftSpearmanLoss": "pcctune.losses.soft_spearman",
    "RegressionLoss": "pcctune.losses.regression",
    "EmbeddingDPOLoss": "pcctune.losses.dpo",
    # evaluators and evaluation
    "PccEvaluator": "pcctune.evaluation.evaluator",
    "DevSTSEvaluator": "pcctune.training.dev",
    "evaluate": "pcctune.orchestration.library",
    # data as datasets.Dataset
    "stage2_dataset": "pcctune.orchestration.library",
    "nli_triplets": "pcctune.orchestration.library",
    # models
    "build_model": "pcctune.modeling.build",
    "apply_template": "pcctune.modeling.template",
    # the whole pipeline
    "RunConfig": "pcctune.training.config",
    "load_config": "pcctune.training.config",
    "train": "pcctune.orchestration.library",
    # is B better than A? (docs/evaluation.md, "Comparing runs")
    "compare_runs": "pcctune.orchestration.compare",
    "compare_models": "pcctune.orchestration.compare_models",
    "seed_difference": "pcctune.evaluation.compare",
    "paired_bootstrap": "pcctune.evaluation.compare",
    "holm_differences": "pcctune.evaluation.multiple",
    "compare_family": "pcctune.orchestration.compare_family",
    # records
    "EvalResult": "pcctune.results",
    "RunResult": "pcctune.results",
    "SourceLeakage": "pcctune.results",
    "CompareResult": "pcctune.results",
    "FamilyResult": "pcctune.results",
    "Difference": "pcctune.results",
    # what pcctune may change in the process (docs/speed-settings.md)
    "cpu_speedups": "pcctune.host_settings",
    "tokenizer_lock": "pcctune.modeling.cpu_workers",
}
__all__ = ["PcctuneError", "__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pcctune' has no attribute {name!r}")
    with known_noise_dropped():  # the layers import bitsandbytes (through peft), which speaks once, at import
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
