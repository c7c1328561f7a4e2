"""Save a model as plain sentence-transformers wherever its behaviour allows.

A saved model should load in plain sentence-transformers: MTEB, the Hub widget, a colleague without
pcctune, ONNX / OpenVINO exports. ``pcctune.modeling.build`` gives a model sentence-transformers' own
``Transformer`` wherever it behaves as pcctune's, so ``model.save`` writes it plain already. A
``TemplateTransformer`` that uses nothing sentence-transformers lacks (no sentence cut-off, no 4-bit
settings; its template is already a chat template, see ``pcctune.modeling.chat_template``), as a folder
an older pcctune saved holds, is rewritten by ``save_model`` as sentence-transformers' own
``Transformer``: ``modules.json`` names that class and ``sentence_bert_config.json`` drops pcctune's
keys. Anything else (deep continuous prompts, a sentence cut-off, 4-bit layers) keeps pcctune's class,
its save logs why, and the model card says that loading it needs ``pip install pcctune``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from peft.utils import CONFIG_NAME as PEFT_CONFIG
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.util import load_file_path

from pcctune.io import atomic_folder, write_json
from pcctune.modeling.template import PCCTUNE_KEYS, TemplateTransformer, native_config

NATIVE_TRANSFORMER = f"{Transformer.__module__}.{Transformer.__name__}"

MODULES_FILE = "modules.json"
"""The file that makes a folder a saved sentence-transformers model: its modules' names, paths and classes."""
SENTENCE_TRANSFORMERS_CONFIG = "config_sentence_transformers.json"
"""A saved model's own settings (its ``prompts``, ``default_prompt_name``, similarity function)."""
MODULE_CONFIG_FILE = Transformer.config_file_name
"""The config file of a saved input module, in its module folder (``sentence_bert_config.json``)."""


def saved_file(model_name_or_path: str, filename: str, subfolder: str = "", cached_only: bool = False) -> str | None:
    """The path of a saved sentence-transformers model's file (``None`` where it has none), from its folder or the
    Hub, by sentence-transformers' own ``load_file_path`` from the cache its load reads (``SENTENCE_TRANSFORMERS_HOME``
    where set, else the Hugging Face cache); downloaded where missing unless ``cached_only``."""
    cache = os.getenv("SENTENCE_TRANSFORMERS_HOME")  # where the load looks first, as SentenceTransformer does
    return load_file_path(
        model_name_or_path, filename, subfolder=subfolder, cache_folder=cache, local_files_only=cached_only
    )


def saved_json(model_name_or_path: str, filename: str, subfolder: str = "") -> Any:
    """A saved model's JSON file (``saved_file``), parsed; ``None`` where it has none."""
    found = saved_file(model_name_or_path, filename, subfolder)
    return json.loads(Path(found).read_text(encoding="utf-8")) if found else None


def is_saved_model(folder: Path) -> bool:
    """True when ``folder`` holds a saved sentence-transformers model (its ``modules.json``)."""
    return (folder / MODULES_FILE).is_file()


def saved_modules(folder: Path) -> list[dict[str, Any]]:
    """The entries of a saved model's ``modules.json``, in order (each with its ``path`` and ``type``)."""
    return json.loads((folder / MODULES_FILE).read_text(encoding="utf-8"))


def module_types(folder: Path) -> list[str]:
    """The class of each module of a saved model, dotted, as ``modules.json`` names it."""
    return [module["type"] for module in saved_modules(folder)]


def is_pooling_type(module_type: str) -> bool:
    """True for sentence-transformers' ``Pooling`` (a ``module_types`` entry), wherever its module path puts it."""
    return module_type.rsplit(".", 1)[-1] == "Pooling"


def is_native_type(module_type: str) -> bool:
    """True for a module class of sentence-transformers itself (a ``module_types`` entry): it loads without pcctune."""
    return module_type.startswith("sentence_transformers.")


def is_pcctune_type(module_type: str) -> bool:
    """True for a module class of pcctune (a ``module_types`` entry): loading it needs pcctune installed."""
    return module_type.startswith("pcctune.")


def nativize(folder: Path) -> bool:
    """Rewrite a saved folder whose input module is a native-capable ``TemplateTransformer`` to name
    sentence-transformers' ``Transformer``; True when the folder now needs no pcctune."""
    modules = saved_modules(folder)
    first = modules[0]
    if first["type"] != f"{TemplateTransformer.__module__}.{TemplateTransformer.__name__}":
        return not is_pcctune_type(first["type"])
    config_file = folder / first["path"] / MODULE_CONFIG_FILE
    config = json.loads(config_file.read_text(encoding="utf-8"))
    if not native_config(config):
        return False
    write_json({key: value for key, value in config.items() if key not in PCCTUNE_KEYS}, config_file)
    first["type"] = NATIVE_TRANSFORMER
    write_json(modules, folder / MODULES_FILE)
    return True


def keep_base_dtype(model: SentenceTransformer, folder: Path) -> None:
    """Write the dtype the model computes in into a saved LoRA module's config (``model_kwargs``): the folder holds
    the adapter alone, and plain sentence-transformers loads its base in the dtype the base is stored in (bf16 for
    many decoders), where pcctune loads fp32 unless told otherwise; the embeddings would differ."""
    first = saved_modules(folder)[0]
    module_folder = folder / first["path"]
    config_file = module_folder / MODULE_CONFIG_FILE
    if not (module_folder / PEFT_CONFIG).is_file() or not config_file.is_file():  # no adapter: the weights are all
        return
    dtype = str(next(model[0].parameters()).dtype).removeprefix("torch.")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["model_kwargs"] = {**config.get("model_kwargs", {}), "dtype": dtype}
    write_json(config, config_file)


def save_native(model: SentenceTransformer, folder: Path) -> bool:
    """Save ``model`` into ``folder`` as plain sentence-transformers when it can be; True when it loads
    without pcctune. For a folder that is being written atomically anyway (an export, a demonstration search)."""
    model.save(str(folder))
    keep_base_dtype(model, folder)
    return nativize(folder)


def save_model(model: SentenceTransformer, folder: Path) -> bool:
    """``save_native``, atomically: a complete folder or none."""
    with atomic_folder(folder) as staging:
        return save_native(model, staging)
