"""DCPCSE's auxiliary MLM objective (§2.2): ℓ = ℓ_main + λ·ℓ_MLM, λ = 0.1 · 0.95^(step/100).

15% of the tokens of the first input column are chosen (80% [MASK], 10% random, 10% kept, as in
BERT: transformers' ``DataCollatorForLanguageModeling``). They are encoded through the model's
input module, prompts included, and predicted with the backbone's pretrained MLM head, which
stays frozen like the rest of the backbone unless ``train_head`` is set (needed for checkpoints
shipped without an MLM head, e.g. sentence-transformers' all-MiniLM-L6-v2).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn
from transformers import AutoModelForMaskedLM, DataCollatorForLanguageModeling
from typing_extensions import override

from pcctune.errors import PcctuneError
from pcctune.losses import citations

INITIAL_WEIGHT = 0.1
"""λ at step 0 (DCPCSE §2.2)."""
DECAY_RATE = 0.95
"""λ's factor every ``DECAY_STEPS`` steps (DCPCSE's code)."""
DECAY_STEPS = 100
MASK_PROBABILITY = 0.15
"""The share of tokens masked (BERT's 15 %)."""


def mlm_weight(
    step: int, initial: float = INITIAL_WEIGHT, decay_rate: float = DECAY_RATE, decay_steps: int = DECAY_STEPS
) -> float:
    """λ = initial · decay_rate^(step / decay_steps)."""
    return initial * decay_rate ** (step / decay_steps)


def load_mlm_head(source: str, train_head: bool = False) -> nn.Module:
    """The MLM prediction head of a BERT/RoBERTa-style checkpoint."""
    lm, info = AutoModelForMaskedLM.from_pretrained(source, output_loading_info=True)
    head = getattr(lm, "cls", None) or getattr(lm, "lm_head", None)
    if head is None:
        raise PcctuneError(f"{source} has no masked-LM head this loss knows (cls or lm_head)")
    missing_head = [k for k in info.get("missing_keys", []) if k.startswith(("cls.", "lm_head."))]
    if missing_head and not train_head:
        raise PcctuneError(f"{source} ships no MLM head weights ({missing_head[0]} …); set mlm.train_head: true")
    for parameter in head.parameters():
        parameter.requires_grad_(train_head)
    return head


class AuxiliaryMLMLoss(nn.Module):
    """Wraps a stage's loss and adds the decaying MLM term during training: ℓ_main + λ·ℓ_MLM, λ = ``initial_weight`` ·
    ``decay_rate`` ^ (step / ``decay_steps``) (DCPCSE §2.2's auxiliary MLM objective; the defaults are the paper's).
    Evaluation (no gradients) reads the main loss alone. The step counts the loss's calls with gradients;
    ``StepToLoss`` (``pcctune.training.callbacks``) sets it to the trainer's global step instead, as pcctune's runs
    do, so that λ is right under gradient accumulation and after a resume.

    Args:
        main: the stage's own loss (InfoNCE, for instance).
        model: the SentenceTransformer being trained; its input module encodes the masked tokens, prompts included.
        head: the backbone's masked-LM prediction head (``load_mlm_head``).
        initial_weight: λ at step 0.
        decay_rate: λ's factor every ``decay_steps`` steps.
        decay_steps: the steps over which λ decays by ``decay_rate``.
        mask_probability: the share of the first column's tokens chosen for masking (80 % [MASK], 10 % random,
            10 % kept).

    Inputs: whatever ``main`` reads; the MLM term masks the first column.

    Examples:
        ```python
        loss = AuxiliaryMLMLoss(InfoNCELoss(model), model, load_mlm_head("bert-base-uncased"))
        trainer = SentenceTransformerTrainer(
            model=model, train_dataset=triplets, loss=loss, args=args, callbacks=[StepToLoss(loss)]
        )
        ```
    """

    citation = citations.DCPCSE  # sentence-transformers' model card cites it from here

    def __init__(
        self,
        main: nn.Module,
        model: SentenceTransformer,
        head: nn.Module,
        initial_weight: float = INITIAL_WEIGHT,
        decay_rate: float = DECAY_RATE,
        decay_steps: int = DECAY_STEPS,
        mask_probability: float = MASK_PROBABILITY,
    ) -> None:
        super().__init__()
        self.main = main
        self.model = model
        self.head = head
        self.initial_weight = initial_weight
        self.decay_rate = decay_rate
        self.decay_steps = decay_steps
        input_module: Any = model[0]
        self.collator = DataCollatorForLanguageModeling(input_module.tokenizer, mlm_probability=mask_probability)
        self.step = 0

    def mlm_loss(self, features: dict[str, Tensor]) -> Tensor:
        """The masked-language-model loss of one column (DCPCSE's auxiliary objective): its tokens masked by
        ``DataCollatorForLanguageModeling`` (special and padding tokens never), the backbone's token embeddings through
        the MLM head, cross-entropy over the masked positions."""
        features = dict(features)
        special = torch.tensor(
            [
                self.collator.tokenizer.get_special_tokens_mask(row, already_has_special_tokens=True)
                for row in features["input_ids"].tolist()
            ],
            dtype=torch.bool,
        )
        special |= features["attention_mask"].cpu() == 0
        inputs, labels = self.collator.torch_mask_tokens(
            features["input_ids"].clone().cpu(), special_tokens_mask=special
        )
        features["input_ids"] = inputs.to(features["attention_mask"].device)
        input_module: Any = self.model[0]
        tokens = input_module(features)["token_embeddings"]
        logits = self.head(tokens)
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.to(logits.device).reshape(-1), ignore_index=-100
        )

    @override
    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = list(sentence_features)
        main = self.main(features, labels)
        if not torch.is_grad_enabled():
            return main
        weight = mlm_weight(self.step, self.initial_weight, self.decay_rate, self.decay_steps)
        self.step += 1
        return main + weight * self.mlm_loss(features[0])
