"""The prompt a model reads before each sentence: sentence-transformers' ``prompts`` and ``default_prompt_name``.

Most current embedding models (E5, BGE, GTE) ship an instruction in their ``config_sentence_transformers.json``
(``"prompts": {"query": "query: "}, "default_prompt_name": "query"``), and ``SentenceTransformer.encode`` applies
it to every input unless told otherwise. pcctune resolves the prompt with the model's own ``_resolve_prompt`` (an
explicit ``prompt``, else ``prompt_name``, else the default; ``""`` is no prompt) and hands it to the model's own
``preprocess``, which applies it as ``encode`` does: prepended to the text, or, for an input module that reads
messages (a chat template, a pcctune template), as a system message. Every pcctune encoding path (evaluations, dev
evaluations during training, ``pcctune encode``) and the trainer's ``prompts`` read the same prompt, so a model is
trained and scored on the text ``encode`` gives it.

``use_prompt`` makes a prompt the model's default, the way a run config or ``pcctune eval --prompt`` asks for one:
the model then carries it into ``encode``, a save and the cache keys, which hash ``prompts`` and
``default_prompt_name`` (``pcctune.modeling.fingerprint``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from sentence_transformers import SentenceTransformer

from pcctune.errors import PcctuneError
from pcctune.modeling.build import ModelSource, resolve_source
from pcctune.modeling.saving import MODULES_FILE, SENTENCE_TRANSFORMERS_CONFIG, saved_file

GIVEN_PROMPT_NAME = "sts"
"""The name under which a prompt text given to ``use_prompt`` joins the model's ``prompts``, unless it already holds
that text under a name of its own."""


def prompt_in_force(
    model: SentenceTransformer, prompt: str | None = None, prompt_name: str | None = None
) -> str | None:
    """The prompt ``model.encode(..., prompt=prompt, prompt_name=prompt_name)`` applies (``None`` or ``""``: none),
    resolved by sentence-transformers itself; a name the model lacks is refused in one line."""
    try:
        return model._resolve_prompt(prompt, prompt_name)
    except ValueError:
        raise no_such_prompt(str(prompt_name), model.prompts) from None


def no_such_prompt(prompt_name: str, names: Iterable[str]) -> PcctuneError:
    """The one-line refusal of a prompt name the model lacks, naming the prompts it has."""
    return PcctuneError(f"the model has no prompt named {prompt_name!r}; its prompts: {', '.join(names) or 'none'}")


def saved_prompt_names(model: str, cached_only: bool = False) -> list[str] | None:
    """The prompt names the saved settings of the sentence-transformers model ``model`` (a local folder or a Hub id)
    give it, read from its two small settings files, without its weights: those every ``SentenceTransformer`` starts
    with (its ``_default_prompts``) and its saved ``prompts``. A Hub model's files come from the cache its load reads
    (``pcctune.modeling.saving.saved_file``), downloaded where missing unless ``cached_only`` (the cache alone, no
    Hub call). ``None`` where
    ``model`` is not known here to be a saved sentence-transformers model: a plain Hugging Face model, a Hub id not
    cached while offline (or with ``cached_only``), a Hub that does not answer, a damaged settings file (the load
    then says why)."""
    try:
        modules = saved_file(model, MODULES_FILE, cached_only=cached_only)
        settings = saved_file(model, SENTENCE_TRANSFORMERS_CONFIG, cached_only=cached_only) if modules else None
        saved = json.loads(Path(settings).read_text(encoding="utf-8")).get("prompts", {}) if settings else {}
    except Exception:  # noqa: BLE001 - whatever the Hub or a file raises here, the model's load reports in one line
        return None
    if modules is None:
        return None
    return list(dict.fromkeys([*SentenceTransformer._default_prompts, *saved]))


def check_prompt_name(source: ModelSource, prompt_name: str | None) -> None:
    """Refuse, before the model loads, a ``prompt_name`` the model's saved settings lack: a saved folder's, or a Hub
    model's two settings files (fetched alone, so a misspelt name costs no weights download). A model whose prompts
    cannot be read first (``saved_prompt_names`` is ``None``) is checked once it loads (``prompt_in_force``). A name
    the cached settings hold passes without asking the Hub (which, unreachable with ``HF_HUB_OFFLINE`` unset, makes
    each call wait through its retries); any other is checked against the Hub's latest settings before a refusal."""
    if prompt_name is None:
        return
    names = saved_prompt_names(source.path, cached_only=True)
    if names is None or prompt_name not in names:
        names = saved_prompt_names(source.path)
    if names is not None and prompt_name not in names:
        raise no_such_prompt(prompt_name, names)


def check_prompt_choice(prompt: str | None, prompt_name: str | None, model: str | None = None) -> None:
    """Refuse a prompt text and a prompt name together, and a name the model ``model`` (a spec as ``build_model``
    takes it) lacks where its saved settings say so (``check_prompt_name``), before any model loads; the model's
    source is resolved only where a name is given."""
    if prompt is not None and prompt_name is not None:
        raise PcctuneError(
            "give a prompt text (--prompt, prompt=) or a prompt name (--prompt-name, prompt_name=), not both"
        )
    if model is not None and prompt_name is not None:
        check_prompt_name(resolve_source(model), prompt_name)


ROLE_PROMPTS = ("query", "document")
"""The prompts sentence-transformers' ``encode_query`` and ``encode_document`` apply."""


def use_prompt(
    model: SentenceTransformer, prompt: str | None = None, prompt_name: str | None = None
) -> SentenceTransformer:
    """Make ``prompt_name`` (one of ``model.prompts``) or the text ``prompt`` (``""``: no prompt) the prompt ``model``
    applies by default; with neither, leave it as it is. A text the model does not hold yet joins its ``prompts``
    as ``GIVEN_PROMPT_NAME``. It is also the ``query`` and ``document`` prompt where the model has none of its own:
    sentence-transformers' ``encode_query``/``encode_document`` (and MTEB's retrieval and reranking tasks) read
    those, an empty one as "no prompt", and would skip the prompt the model is trained and scored with. Returns the
    model."""
    check_prompt_choice(prompt, prompt_name)
    if prompt_name is not None:
        prompt_in_force(model, prompt_name=prompt_name)  # a name the model lacks is refused here
        model.default_prompt_name = prompt_name
    elif prompt == "":
        model.default_prompt_name = None
    elif prompt is not None:
        name = next((name for name, text in model.prompts.items() if text == prompt), GIVEN_PROMPT_NAME)
        model.prompts[name] = prompt
        model.default_prompt_name = name
    if model.default_prompt_name is not None and (prompt is not None or prompt_name is not None):
        for role in ROLE_PROMPTS:
            if not model.prompts.get(role):
                model.prompts[role] = model.prompts[model.default_prompt_name]
    return model
