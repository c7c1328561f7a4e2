"""The weight dtypes a run may ask for, by name, and the one rule for applying them.

transformers 5 loads weights in the dtype they are stored in: Mistral, Llama-2 and Qwen checkpoints
on the Hub are bf16, so a model loaded without ``dtype=`` stays bf16 although a run asks for fp32.
The authors load with ``torch_dtype=torch.float32`` around their 4-bit layers (Pcc-tuning
``tune.py``), so every pcctune load path (Hub, local folder, GGUF cache, reloads between stages,
evaluations, ``export --merge``) asks ``from_pretrained`` for the dtype by name through
``torch_dtype``.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
from torch import nn

from pcctune.errors import PcctuneError, unknown

DtypeName = Literal["fp32", "bf16", "fp16"]
DTYPES: dict[str, torch.dtype] = dict(
    zip(get_args(DtypeName), (torch.float32, torch.bfloat16, torch.float16), strict=True)
)


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of ``fp32``, ``bf16`` or ``fp16``; any other name is one clear error."""
    if name not in DTYPES:
        raise PcctuneError(unknown("dtype", name, list(DTYPES)))
    return DTYPES[name]


def loaded_dtype_name(model: nn.Module) -> str:
    """The dtype ``model``'s weights were loaded in, by the name a run asks for it (``fp32``, ``bf16``, ``fp16``): its
    first floating-point parameter's (sentence-transformers' ``model.dtype`` takes the first parameter of any kind,
    which in a 4-bit model may be packed integers; here those are passed over for the weights left unquantized);
    torch's own name for a dtype pcctune does not load in."""
    found = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    return next((name for name, dtype in DTYPES.items() if dtype == found), str(found))
