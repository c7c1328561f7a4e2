"""LoRA and QLoRA adapters through peft, on the backbone inside a SentenceTransformer.

Pcc-tuning (§3) and PromptEOL (§3.3, Appendix C) train 7B models with QLoRA: the base in 4-bit NF4
(bitsandbytes, on GPU or CPU; ``pcctune.modeling.quantization``), LoRA r=64, α=16, dropout
0.05 on every linear layer. The adapter is added once, before stage 1, and stage 2 keeps
training the same adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from peft.utils import CONFIG_NAME, SAFETENSORS_WEIGHTS_NAME, WEIGHTS_NAME
from pydantic import BaseModel, ConfigDict, Field
from sentence_transformers import SentenceTransformer

from pcctune.errors import PcctuneError
from pcctune.io import write_json
from pcctune.modeling.quantization import QuantizationConfig, bitsandbytes_config
from pcctune.modeling.registry import hub_twin

ADAPTER_CONFIG = CONFIG_NAME
"""peft's config file of a saved LoRA adapter (``adapter_config.json``): its base model, rank, targets."""
ADAPTER_WEIGHTS = SAFETENSORS_WEIGHTS_NAME
"""peft's weights file of a saved LoRA adapter (``adapter_model.safetensors``)."""
ADAPTER_FILES = (ADAPTER_CONFIG, ADAPTER_WEIGHTS, WEIGHTS_NAME)
"""Every file peft saves for an adapter: its config and its weights (safetensors, or the older ``.bin``)."""


class AdapterConfig(BaseModel):
    """LoRA / QLoRA (a 4-bit base: bitsandbytes), or DCPCSE's continuous prompts on a frozen backbone."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["none", "lora", "qlora", "deep_prompt", "shallow_prompt"] = Field(
        "none", description="none (full fine-tuning), lora, qlora (4-bit base), deep_prompt or shallow_prompt (DCPCSE)"
    )
    r: int = Field(8, ge=1, description="LoRA rank (the papers: 64)")
    alpha: int = Field(16, gt=0, description="LoRA α; the update is scaled by α / r (the papers: 16)")
    dropout: float = Field(0.05, ge=0, lt=1, description="dropout on the LoRA input (0.05)")
    targets: list[str] | Literal["all-linear"] = Field(
        "all-linear", description="module names LoRA adapts, or all-linear (every linear layer but the LM head)"
    )
    prompt_length: int = Field(16, ge=1, description="continuous prompt tokens per layer (DCPCSE)")
    prompt_projection: bool = Field(False, description="reparameterise the prompts through an MLP (P-tuning v2)")
    offset_positions: bool = Field(True, description="shift the sentence's position ids past the prompt")
    prompt_init_text: str = Field(
        "This sentence means", description="text whose embeddings initialise a shallow prompt"
    )
    quantization: QuantizationConfig = Field(QuantizationConfig(), description="4-bit settings of a qlora backbone")

    def prompt_kwargs(self) -> dict[str, Any] | None:
        """Arguments of ``PromptedTransformer``, or ``None`` for other kinds."""
        if self.kind not in ("deep_prompt", "shallow_prompt"):
            return None
        return {
            "prompt_kind": self.kind.split("_")[0],
            "prompt_length": self.prompt_length,
            "prompt_projection": self.prompt_projection,
            "offset_positions": self.offset_positions,
            "prompt_init_text": self.prompt_init_text,
        }


def quantization_settings(adapter: AdapterConfig) -> dict[str, Any] | None:
    """The 4-bit settings the backbone loads with (``kind: qlora``), or ``None`` for full precision."""
    if adapter.kind != "qlora":
        return None
    settings = adapter.quantization.model_dump()
    bitsandbytes_config(settings)  # fails early, with the install hint, when bitsandbytes is missing
    return settings


def attach_adapter(model: SentenceTransformer, adapter: AdapterConfig) -> None:
    """Add a trainable LoRA adapter (no-op for ``kind: none`` and prompts).

    A model that already has one (a finished stage reloaded from disk, or a saved LoRA model given as the run's
    model, which peft loads frozen for inference) keeps it, and its LoRA weights become trainable again, its base
    frozen: stage 2 continues the stage-1 adapter, and a run on a saved LoRA model continues its adapter, also
    without an ``adapter:`` block (``kind: none``).
    """
    if adapter.kind in ("none", "lora", "qlora") and getattr(getattr(model[0], "model", None), "peft_config", None):
        for name, parameter in model.named_parameters():
            if "lora_" in name:
                parameter.requires_grad_(True)
        return
    if adapter.kind not in ("lora", "qlora"):
        return
    from peft import LoraConfig, TaskType

    if adapter.kind == "qlora":
        from peft import prepare_model_for_kbit_training

        # Freeze the base and keep its non-quantized weights (norms, embeddings) in fp32, as the authors do;
        # gradient checkpointing is a stage option of the trainer, not switched on here.
        prepare_model_for_kbit_training(model[0].model, use_gradient_checkpointing=False)
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
    """The share of the model's weights that train (LoRA's factors of a frozen base, for instance)."""
    total = sum(p.numel() for p in model.parameters())
    return sum(p.numel() for p in model.parameters() if p.requires_grad) / max(total, 1)


def check_adapter_folder(folder: str | Path) -> Path:
    """``folder`` when it holds a saved LoRA adapter (checked before any weight loads), else one clear error."""
    folder = Path(folder)
    if not (folder / ADAPTER_CONFIG).is_file():
        raise PcctuneError(f"{folder} holds no LoRA adapter (no {ADAPTER_CONFIG})")
    return folder


def load_adapter_folder(model: SentenceTransformer, folder: str | Path) -> None:
    """Put a saved LoRA adapter (``adapter_config.json`` and its weights, e.g. from ``pcctune export
    --adapter-only``) on ``model``'s backbone, frozen for inference: the base and the adapter given apart, as the
    authors' ``evaluation.py`` scores a QLoRA run (its ``--lora_weight`` on the model it names)."""
    folder = check_adapter_folder(folder)
    if getattr(model[0].model, "peft_config", None):
        raise PcctuneError("the model already carries a LoRA adapter: give its base model with --adapter")
    model.load_adapter(str(folder))
    model.eval()


BASE_KEY = "base_model_name_or_path"
"""The key of a saved adapter's config (peft's) naming its base model: the name or path the base was loaded from."""


def adapter_base(folder: Path) -> str | None:
    """The base model the saved LoRA adapter in ``folder`` names (``BASE_KEY``); ``None`` where ``folder`` holds
    no readable adapter config or it names none."""
    try:
        config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    base = config.get(BASE_KEY) if isinstance(config, dict) else None
    return base if isinstance(base, str) else None


def adapter_config_naming(folder: Path, base: str | None) -> dict[str, Any]:
    """``folder``'s adapter config naming ``base`` as its base model, the rest as it was."""
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    return {**config, BASE_KEY: base}


def name_adapter_base(folder: Path, base: str | None, written_to: Path | None = None) -> None:
    """Write ``folder``'s adapter config naming ``base`` as its base model (``adapter_config_naming``) into
    ``written_to`` (another folder: a copy being made) or back into ``folder``."""
    write_json(adapter_config_naming(folder, base), (written_to or folder) / ADAPTER_CONFIG)


def base_on_hub(base: object) -> str | None:
    """The Hub id that loads the base model a saved adapter names (peft's ``base_model_name_or_path``, the name or
    path the base was loaded from): a Hub id as written, a packaged MiniLM or MPNet folder's Hub id (the same
    weights), else ``None``: a folder of this machine alone, a packaged GGUF decoder, whose dequantized weights
    are not the Hub's, or no name at all."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(base, str):
        return None
    path = Path(base).expanduser()
    if not path.exists() and not path.is_absolute() and not base.startswith((".", "~")):
        try:
            validate_repo_id(base)  # a Windows path or a nested relative one is none
        except HFValidationError:
            return None
        return base
    return hub_twin(path) if path.is_dir() else None
