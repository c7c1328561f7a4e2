"""LoRA and QLoRA adapters through peft, on the backbone inside a SentenceTransformer.

Pcc-tuning (§4.1) and PromptEOL (§3.2) train 7B models with QLoRA: the base in 4-bit
(bitsandbytes, CUDA only), LoRA r=64, α=16, dropout 0.05 on every linear layer. The adapter is
added once, before stage 1, and stage 2 keeps training the same adapter.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict
from sentence_transformers import SentenceTransformer

from pcctune.errors import PcctuneError


class AdapterConfig(BaseModel):
    """LoRA / QLoRA (QLoRA needs CUDA and bitsandbytes), or DCPCSE's continuous prompts on a frozen backbone."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["none", "lora", "qlora", "deep_prompt", "shallow_prompt"] = "none"
    r: int = 8
    alpha: int = 16
    dropout: float = 0.05
    targets: list[str] | Literal["all-linear"] = "all-linear"
    prompt_length: int = 16
    prompt_projection: bool = False
    offset_positions: bool = True
    prompt_init_text: str = "This sentence means"

    def prompt_kwargs(self) -> dict[str, Any] | None:
        """Arguments of :class:`~pcctune.modeling.prefix.PromptedTransformer`, or ``None`` for other kinds."""
        if self.kind not in ("deep_prompt", "shallow_prompt"):
            return None
        return {
            "prompt_kind": self.kind.split("_")[0],
            "prompt_length": self.prompt_length,
            "prompt_projection": self.prompt_projection,
            "offset_positions": self.offset_positions,
            "prompt_init_text": self.prompt_init_text,
        }


def quantization_kwargs(adapter: AdapterConfig) -> dict[str, Any]:
    """``model_kwargs`` that load the base in 4-bit NF4 for QLoRA (CUDA + bitsandbytes only)."""
    if adapter.kind != "qlora":
        return {}
    if not torch.cuda.is_available():
        raise PcctuneError("QLoRA needs a CUDA GPU and bitsandbytes; use adapter.kind: lora on this machine")
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        raise PcctuneError("QLoRA needs bitsandbytes: pip install bitsandbytes") from None
    from transformers import BitsAndBytesConfig

    return {
        "quantization_config": BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16,
        )
    }


def attach_adapter(model: SentenceTransformer, adapter: AdapterConfig) -> None:
    """Add a trainable LoRA adapter (no-op for ``kind: none`` and prompts).

    A model that already has one (a finished stage reloaded from disk, which peft loads frozen
    for inference) keeps it, and its LoRA weights become trainable again: stage 2 continues the
    stage-1 adapter.
    """
    if adapter.kind not in ("lora", "qlora"):
        return
    if getattr(model[0].model, "peft_config", None):
        for name, parameter in model.named_parameters():
            if "lora_" in name:
                parameter.requires_grad_(True)
        return
    from peft import LoraConfig, TaskType

    model.add_adapter(
        LoraConfig(
            r=adapter.r,
            lora_alpha=adapter.alpha,
            lora_dropout=adapter.dropout,
            target_modules=adapter.targets,
            task_type=TaskType.FEATURE_EXTRACTION,
        )
    )


def trainable_fraction(model: SentenceTransformer) -> float:
    total = sum(p.numel() for p in model.parameters())
    return sum(p.numel() for p in model.parameters() if p.requires_grad) / max(total, 1)
