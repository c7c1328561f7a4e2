"""A LoRA / QLoRA model as one full-precision model that loads anywhere (QLoRA paper §3; Pcc-tuning's
checkpoints are adapters on a 7B base).

``merge_adapter`` loads the adapter's base model in full precision (not the 4-bit copy it
trained against, the usual QLoRA practice), folds the LoRA update W + (α/r)·BA into every
adapted layer with peft's ``merge_and_unload``, and writes a sentence-transformers folder with
the merged weights and the same template and pooling, without the 4-bit settings, as plain
sentence-transformers (``pcctune.modeling.saving``). The folder is written atomically.

``export_adapter`` writes the adapter alone (fp16 halves it), to be scored on its base; its config names a
packaged MiniLM or MPNet base by Hub id rather than by this machine's path (``adapters.base_on_hub``).

``export_model`` re-saves any model folder, old ones included, as plain sentence-transformers,
with an ONNX or OpenVINO export of its backbone on request.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pcctune.errors import PcctuneError
from pcctune.io import atomic_folder, write_json
from pcctune.modeling.adapters import (
    ADAPTER_CONFIG,
    ADAPTER_FILES,
    ADAPTER_WEIGHTS,
    BASE_KEY,
    adapter_base,
    base_on_hub,
    name_adapter_base,
)
from pcctune.modeling.backends import Backend, export_onnx, export_openvino
from pcctune.modeling.dtypes import torch_dtype
from pcctune.modeling.saving import MODULE_CONFIG_FILE, nativize, save_native


def merge_adapter(folder: str | Path, output: str | Path, dtype: str = "fp32") -> Path:
    """Write ``folder`` (a saved model whose input module holds a LoRA adapter) with the adapter merged, the
    base loaded in ``dtype`` (a bf16 checkpoint merges in fp32 when fp32 is asked)."""
    from peft import PeftModel
    from transformers import AutoModel, AutoTokenizer

    folder, output = Path(folder), Path(output)
    adapter_config = folder / ADAPTER_CONFIG
    if not adapter_config.is_file():
        raise PcctuneError(f"{folder} holds no LoRA adapter (no {ADAPTER_CONFIG}): nothing to merge")
    base = adapter_base(folder)
    if base is None:
        raise PcctuneError(f"{adapter_config} names no base model ({BASE_KEY}): nothing to merge the adapter into")
    if not (folder / MODULE_CONFIG_FILE).is_file():
        raise PcctuneError(
            f"{folder} holds an adapter alone (an --adapter-only export: no template, pooling or tokenizer); merge the "
            f"saved model it came from, or score it on its base: pcctune eval {base} --adapter {folder} (and the run's "
            "--template)"
        )
    backbone = AutoModel.from_pretrained(base, dtype=torch_dtype(dtype))
    merged: Any = PeftModel.from_pretrained(backbone, str(folder)).merge_and_unload()
    with atomic_folder(output) as staging:
        for item in folder.iterdir():
            if item.name in ADAPTER_FILES:
                continue
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, staging / item.name)
        merged.save_pretrained(staging)
        AutoTokenizer.from_pretrained(str(folder)).save_pretrained(staging)
        module_config = json.loads((folder / MODULE_CONFIG_FILE).read_text(encoding="utf-8"))
        if module_config.get("quantization"):
            module_config["quantization"] = None
            write_json(module_config, staging / MODULE_CONFIG_FILE)
        nativize(staging)
    return output


def export_adapter(folder: str | Path, output: str | Path, dtype: str = "fp16") -> Path:
    """Write only the LoRA adapter of a saved model (its ``adapter_config.json`` and weights, floats cast to
    ``dtype``): the small artefact that, put on the base model, scores as the run did (``pcctune eval BASE
    --template T --adapter OUTPUT``)."""
    from safetensors.torch import load_file, save_file

    folder, output = Path(folder), Path(output)
    weights = folder / ADAPTER_WEIGHTS
    if not (folder / ADAPTER_CONFIG).is_file() or not weights.is_file():
        raise PcctuneError(f"{folder} holds no LoRA adapter ({ADAPTER_CONFIG}, {ADAPTER_WEIGHTS})")
    target = torch_dtype(dtype)
    tensors = {k: v.to(target) if v.is_floating_point() else v for k, v in load_file(weights).items()}
    with atomic_folder(output) as staging:
        save_file(tensors, staging / weights.name, metadata={"format": "pt"})
        base = adapter_base(folder)
        name_adapter_base(folder, base_on_hub(base) or base, written_to=staging)
    return output


def export_model(folder: str | Path, output: str | Path, backend: Backend = "torch") -> bool:
    """Re-save a model folder (one written by any pcctune version) as plain sentence-transformers where its
    behaviour allows, with an ONNX / OpenVINO export of its backbone for ``backend`` (``backends``);
    True when the result loads without pcctune."""
    from pcctune.modeling.build import build_model

    config = Path(folder) / MODULE_CONFIG_FILE
    if config.is_file() and json.loads(config.read_text(encoding="utf-8")).get("quantization"):
        raise PcctuneError(f"{folder} is a 4-bit model: add --merge for a full-precision model that loads anywhere")
    model = build_model(str(folder))
    with atomic_folder(Path(output)) as staging:
        native = save_native(model, staging)
        if backend != "torch":
            onnx_path = export_onnx(model, staging)
            if backend == "openvino":
                export_openvino(onnx_path, staging)
    return native
