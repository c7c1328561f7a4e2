"""What a saved sentence-transformers model holds beyond its input module and pooling, kept when it is rebuilt.

``pcctune.modeling.build`` rebuilds a saved model's input module and pooling when asked for another template,
pooling, backbone arguments or continuous prompts. Everything else the model saved still decides its embeddings and
how they are used, and is kept, read as sentence-transformers reads it, from a local folder or the Hub:

- the modules after its ``Pooling`` (``Dense``, ``Normalize``, ...), each class resolved by sentence-transformers'
  ``import_module_class`` (a class outside sentence-transformers only with ``trust_remote_code``) and loaded by
  its own ``load``; a saved ``Dense`` that the new pooling's width does not fit is refused in one line;
- the saved pooling's mode where no other is asked for (``saved_pooling_mode``), and its ``include_prompt``
  (whether prompt tokens are pooled), on the rebuilt pooling;
- the settings of ``config_sentence_transformers.json`` (``prompts``, ``default_prompt_name``, ``truncate_dim``, and
  the similarity function where sentence-transformers supports it), given to the rebuilt model's constructor.
"""

from __future__ import annotations

import inspect
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Module
from sentence_transformers.sentence_transformer.modules import Dense, Pooling
from sentence_transformers.util import load_dir_path
from sentence_transformers.util.misc import import_module_class

from pcctune.errors import PcctuneError
from pcctune.modeling.saving import MODULES_FILE, SENTENCE_TRANSFORMERS_CONFIG, is_pooling_type, saved_json


def _load_module(model_name_or_path: str, entry: dict[str, Any], trust_remote_code: bool) -> Module:
    module_class: type[Module] = import_module_class(
        entry["type"], model_name_or_path, trust_remote_code=trust_remote_code
    )
    if len(inspect.signature(module_class.load).parameters) == 1:  # an older module: load(local folder) alone
        return module_class.load(load_dir_path(model_name_or_path, entry["path"]) or model_name_or_path)
    return module_class.load(model_name_or_path, subfolder=entry["path"], trust_remote_code=trust_remote_code)


def _pooling_at(entries: list[dict[str, Any]]) -> int | None:
    """Where the ``Pooling`` is among a saved model's modules (``modules.json``'s entries), ``None`` where none is."""
    return next((i for i, entry in enumerate(entries) if is_pooling_type(entry["type"])), None)


def _pooling_config(model_name_or_path: str, entry: dict[str, Any]) -> dict[str, Any]:
    return saved_json(model_name_or_path, "config.json", subfolder=entry["path"]) or {}


LEGACY = ("_token", "_tokens", "")
"""The endings of sentence-transformers' legacy boolean pooling keys (``pooling_mode_cls_token``,
``pooling_mode_mean_tokens``, ``pooling_mode_lasttoken``)."""


def saved_pooling_mode(model_name_or_path: str) -> str | None:
    """The pooling mode a saved sentence-transformers model (a folder or a Hub id) pools with (its first mode where
    it names several; its legacy boolean keys read as sentence-transformers reads them); ``None`` where it saved no
    pooling."""
    entries = saved_json(model_name_or_path, MODULES_FILE) or []
    at = _pooling_at(entries)
    if at is None:
        return None
    config = _pooling_config(model_name_or_path, entries[at])
    mode = config.get("pooling_mode")
    if mode is None:  # legacy boolean keys
        legacy = ("cls", "lasttoken", "mean")
        mode = next((key for key in legacy if any(config.get(f"pooling_mode_{key}{end}") for end in LEGACY)), "mean")
    return mode if isinstance(mode, str) else mode[0]


def _fit_pooling(model: SentenceTransformer, model_name_or_path: str, config: dict[str, Any], tail: list[Any]) -> None:
    """The saved pooling's ``include_prompt`` (from its ``config``) on the rebuilt one; a saved ``Dense`` it no
    longer fits refused."""
    pooling = next(module for module in model if isinstance(module, Pooling))
    pooling.include_prompt = config.get("include_prompt", True)
    width = pooling.get_embedding_dimension()
    if tail and isinstance(tail[0], Dense) and tail[0].in_features != width:
        raise PcctuneError(
            f"{model_name_or_path}'s saved dense layer takes {tail[0].in_features}-wide vectors and the pooling "
            f"asked for gives {width}: keep its saved pooling"
        )


def keep_saved_parts(
    model: SentenceTransformer, model_name_or_path: str, trust_remote_code: bool = False
) -> SentenceTransformer:
    """``model`` (a rebuilt input module and pooling) followed by the saved model's modules after its pooling, with
    its pooling's ``include_prompt`` and its saved settings; ``model`` itself where ``model_name_or_path`` names no
    saved sentence-transformers model."""
    entries = saved_json(model_name_or_path, MODULES_FILE)
    if entries is None:
        return model
    at = _pooling_at(entries)
    tail_entries = [] if at is None else entries[at + 1 :]
    tail = [_load_module(model_name_or_path, entry, trust_remote_code) for entry in tail_entries]
    if at is not None:
        _fit_pooling(model, model_name_or_path, _pooling_config(model_name_or_path, entries[at]), tail)
    settings = saved_json(model_name_or_path, SENTENCE_TRANSFORMERS_CONFIG) or {}
    similarity = settings.get("similarity_fn_name")
    return SentenceTransformer(
        modules=[*model, *tail],
        device=str(model.device),
        prompts=settings.get("prompts"),
        default_prompt_name=settings.get("default_prompt_name"),
        similarity_fn_name=similarity if similarity in SentenceTransformer.SUPPORTED_SIMILARITY_FN_NAMES else None,
        truncate_dim=settings.get("truncate_dim"),
    )
