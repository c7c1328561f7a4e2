"""What a saved sentence-transformers model holds beyond its input module and pooling, kept when it is rebuilt.

``pcctune.modeling.build`` rebuilds a saved model's input module and pooling when asked for another template,
pooling, backbone arguments or continuous prompts. Everything else the folder saved still decides its embeddings and
how they are used, and is kept: the modules after its ``Pooling`` (``Dense``, ``Normalize``, ...), each loaded by its
own class's ``load`` as sentence-transformers loads it, and the settings of ``config_sentence_transformers.json``
(``prompts``, ``default_prompt_name``, the similarity function, ``truncate_dim``), given to the rebuilt model's
constructor as a user of sentence-transformers would.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Module
from sentence_transformers.util import import_from_string

from pcctune.modeling.saving import SENTENCE_TRANSFORMERS_CONFIG, is_saved_model, saved_modules


def modules_after_pooling(folder: Path) -> list[dict[str, Any]]:
    """The ``modules.json`` entries that follow a saved model's ``Pooling`` (none without one)."""
    entries = saved_modules(folder)
    pooling = next((i for i, entry in enumerate(entries) if entry["type"].endswith("Pooling")), len(entries))
    return entries[pooling + 1 :]


def _load_module(folder: Path, entry: dict[str, Any], trust_remote_code: bool) -> Module:
    module_class: type[Module] = import_from_string(entry["type"])
    if len(inspect.signature(module_class.load).parameters) == 1:  # an older module: load(path) alone
        return module_class.load(str(folder / entry["path"]))
    return module_class.load(str(folder), subfolder=entry["path"], trust_remote_code=trust_remote_code)


def keep_saved_parts(model: SentenceTransformer, folder: Path, trust_remote_code: bool = False) -> SentenceTransformer:
    """``model`` (a rebuilt input module and pooling) followed by ``folder``'s modules after its pooling, with its
    saved prompts, default prompt, similarity function and truncation; ``model`` itself where ``folder`` is no saved
    model."""
    if not is_saved_model(folder):
        return model
    tail = [_load_module(folder, entry, trust_remote_code) for entry in modules_after_pooling(folder)]
    settings_file = folder / SENTENCE_TRANSFORMERS_CONFIG
    settings = json.loads(settings_file.read_text(encoding="utf-8")) if settings_file.is_file() else {}
    return SentenceTransformer(
        modules=[*model, *tail],
        device=str(model.device),
        prompts=settings.get("prompts"),
        default_prompt_name=settings.get("default_prompt_name"),
        similarity_fn_name=settings.get("similarity_fn_name"),
        truncate_dim=settings.get("truncate_dim"),
    )
