"""4-bit NF4 loading for QLoRA (Dettmers et al. 2023; Pcc-tuning §3, PromptEOL §3.3) on CPU and GPU.

The settings are a plain, JSON-able ``QuantizationConfig``. A model's input module keeps them
in its saved config (``sentence_bert_config.json``), so a stage's saved model, its checkpoints
and every evaluation reload the backbone in the same 4-bit precision it trained in.

bitsandbytes ≥ 0.50 runs NF4 on CPU. On CPUs with AVX512-BF16 its ``Linear4bit`` repacks the
weight into a CPU-only layout (bf16 scales) the first time it runs in eval mode without
gradients, and later forwards use a kernel with no backward: after one dev evaluation, training
would silently stop propagating gradients through the frozen 4-bit layers to the LoRA weights
of earlier layers. ``keep_4bit_layout`` turns that repacking off, so training and evaluation
use the same NF4 weights and the same kernel.
"""

from __future__ import annotations

import sys
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from pcctune.errors import PcctuneError
from pcctune.modeling.dtypes import DtypeName, torch_dtype

FourBitType = Literal["nf4", "fp4"]
FOUR_BIT_TYPES: tuple[str, ...] = get_args(FourBitType)


class QuantizationConfig(BaseModel):
    """4-bit settings: NF4 with double quantisation and an fp32 compute dtype, as the authors' scripts."""

    model_config = ConfigDict(extra="forbid")

    quant_type: FourBitType = Field("nf4", description="4-bit data type (NF4, as QLoRA and the papers)")
    double_quant: bool = Field(True, description="quantise the quantisation constants too")
    compute_dtype: DtypeName = Field(
        "fp32", description="dtype of the 4-bit layers' matrix products (the authors: fp32)"
    )


def bitsandbytes_config(settings: dict[str, Any]) -> Any:
    """transformers' ``BitsAndBytesConfig`` for saved ``settings``; a clear error without bitsandbytes."""
    try:
        import bitsandbytes  # noqa: F401  (transformers needs it to load 4-bit weights)
    except ImportError:
        raise PcctuneError("4-bit (QLoRA) models need bitsandbytes: pip install 'pcctune[qlora]'") from None
    from transformers import BitsAndBytesConfig

    config = QuantizationConfig.model_validate(settings)
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type=config.quant_type,
        bnb_4bit_use_double_quant=config.double_quant,
        bnb_4bit_compute_dtype=torch_dtype(config.compute_dtype),
    )


def loaded_linear_4bit_type() -> type[nn.Module] | None:
    """bitsandbytes' ``Linear4bit`` if bitsandbytes is loaded, else None: a model can hold no 4-bit layer then, and
    asking does not import bitsandbytes."""
    module = sys.modules.get("bitsandbytes.nn")
    return None if module is None else module.Linear4bit


def linear_4bit_layers(model: nn.Module) -> list[nn.Module]:
    """The bitsandbytes ``Linear4bit`` layers of ``model`` (none when bitsandbytes is not loaded)."""
    linear_4bit = loaded_linear_4bit_type()
    return [] if linear_4bit is None else [module for module in model.modules() if isinstance(module, linear_4bit)]


def loaded_quantization(model: nn.Module) -> str:
    """The 4-bit type of ``model``'s bitsandbytes layers (``nf4``, ``fp4``), ``none`` where it has none: what an
    evaluation record's ``quantization`` says of a model handed in loaded."""
    layers = linear_4bit_layers(model)
    return str(getattr(layers[0].weight, "quant_type")) if layers else "none"  # noqa: B009  (Params4bit's)


def keep_4bit_layout(model: nn.Module) -> int:
    """Turn off the CPU repacking of every ``Linear4bit`` (see the module docstring); return how many."""
    layers = linear_4bit_layers(model)
    for layer in layers:
        setattr(layer, "support_avx512bf16_for_cpu", False)  # noqa: B010  (a plain attribute of Linear4bit)
    return len(layers)
