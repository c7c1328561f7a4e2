"""A LoRA / QLoRA model as one full-precision model that loads anywhere (QLoRA paper §3; Pcc-tuning's
checkpoints are adapters on a 7B base).

:func:`merge_adapter` loads the adapter's base model in full precision (not the 4-bit copy it
trained against, the usual QLoRA practice), folds the LoRA update W + (α/r)·BA into every
adapted layer with peft's ``merge_and_unload``, and writes a sentence-transformers folder with
the merged weights and the same template and pooling, without the 4-bit settings. The folder is
written atomically.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pcctune.errors import PcctuneError
from pcctune.io import atomic_folder, write_json

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")


def merge_adapter(folder: str | Path, output: str | Path) -> Path:
    """Write ``folder`` (a saved model whose input module holds a LoRA adapter) with the adapter merged."""
    from peft import PeftModel
    from transformers import AutoModel, AutoTokenizer

    folder, output = Path(folder), Path(output)
    adapter_config = folder / "adapter_config.json"
    if not adapter_config.is_file():
        raise PcctuneError(f"{folder} holds no LoRA adapter (no adapter_config.json): nothing to merge")
    base = json.loads(adapter_config.read_text(encoding="utf-8"))["base_model_name_or_path"]
    merged: Any = PeftModel.from_pretrained(AutoModel.from_pretrained(base), str(folder)).merge_and_unload()
    with atomic_folder(output) as staging:
        for item in folder.iterdir():
            if item.name in ADAPTER_FILES:
                continue
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, staging / item.name)
        merged.save_pretrained(staging)
        AutoTokenizer.from_pretrained(str(folder)).save_pretrained(staging)
        module_config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        module_config["quantization"] = None
        write_json(module_config, staging / "sentence_bert_config.json")
    return output
