"""A pcctune template expressed with sentence-transformers' own mechanism: the tokenizer's chat template.

sentence-transformers 6 renders every text through the tokenizer's chat template when its
``Transformer`` module lists the ``message`` modality, and with
``processing_kwargs={"chat_template": {"restore_suffix": True}}`` it writes the template's tail
back over the last real tokens of a row that truncation cut (``Transformer._restore_chat_template_suffix``):
only the sentence loses tokens, and last-token pooling still reads the template's last token. (sentence-transformers
6.2 also writes it over a row exactly ``max_seq_length`` long that was not cut, and the tail tokenized apart can
differ where the sentence's last token merges with the template's first: ``."`` becomes ``"`` on SmolLM2;
docs/models.md.)
A PromptEOL template (Jiang et al., 2023, §3.1) ``This sentence : "{text}" means in one word:"``
therefore becomes the Jinja template

    <bos>{system prompt}This sentence : "{user message}" means in one word:"<eos?>

where ``<bos>`` / ``<eos?>`` are the special tokens the tokenizer itself adds around a text (the
rendered string is tokenized without special tokens). The authors tokenize the filled template with
``tokenizer(filled)`` (Pcc-tuning ``tune.py``, PromptEOL ``ft_llm.py``), and a rendered template must
give the same ids: on a SentencePiece/Metaspace tokenizer (Llama-2, Mistral; ``prepend_scheme="first"``)
a text that follows a literal ``<s>`` loses its word-start ``▁`` (``<s>This`` → ``T h is``, where
``tokenizer("This …")`` gives ``<s> ▁This``), so ``head_join`` puts the one space that restores it
between the two, and ``check_tokens`` refuses, at model build, any template whose rendering still
differs from ``tokenizer(filled)``. A saved model then carries its template in
``tokenizer_config.json`` / ``chat_template.jinja`` and its ``modality_config``: plain
sentence-transformers loads and applies it, with no pcctune installed and no ``trust_remote_code``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from sentence_transformers.base.modules import Transformer
from transformers import PreTrainedTokenizerBase

from pcctune.errors import PcctuneError

TEMPLATE_MARKER = "pcctune template: "
"""Starts the Jinja comment that records the template text, so pcctune can read it back."""

_PROBE = "probe"
PROBE_SENTENCE = "A man plays a guitar."
"""The sentence that ``check_tokens`` fills the template with."""


def _literal(text: str) -> str:
    """``text`` as a Jinja expression that prints it verbatim (a JSON string is a valid Jinja string)."""
    return "{{ " + json.dumps(text, ensure_ascii=False) + " }}" if text else ""


def special_tokens_around(tokenizer: PreTrainedTokenizerBase) -> tuple[str, str]:
    """The special tokens the tokenizer adds before and after a text, as strings (e.g. ``[CLS]``, ``[SEP]``)."""
    plain = list(tokenizer(_PROBE, add_special_tokens=False)["input_ids"])
    full = list(tokenizer(_PROBE, add_special_tokens=True)["input_ids"])
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            head, tail = full[:start], full[start + len(plain) :]
            return "".join(tokenizer.convert_ids_to_tokens(head)), "".join(tokenizer.convert_ids_to_tokens(tail))
    raise PcctuneError(f"cannot tell which special tokens {type(tokenizer).__name__} adds around a text")


def _ids(tokenizer: PreTrainedTokenizerBase, text: str, special: bool) -> list[int]:
    return list(tokenizer(text, add_special_tokens=special, verbose=False)["input_ids"])


def _fill(template: str, sentence: str) -> str:
    prefix, _, suffix = template.partition("{text}")
    return prefix + sentence + suffix


def head_join(tokenizer: PreTrainedTokenizerBase, head: str, template: str) -> str:
    """What stands between the leading special tokens and the text, so that the rendered string, tokenized
    without special tokens, equals ``tokenizer(filled)``: nothing for byte-level BPE and WordPiece, one
    space for a Metaspace tokenizer that gives a text after a special token no word-start ``▁``."""
    if not head:
        return ""
    filled = _fill(template, PROBE_SENTENCE)
    wanted = _ids(tokenizer, filled, special=True)
    return next((join for join in ("", " ") if _ids(tokenizer, head + join + filled, False) == wanted), "")


def render(template: str, tokenizer: PreTrainedTokenizerBase) -> str:
    """The Jinja chat template that fills ``template`` (one ``{text}`` slot) with the user message."""
    prefix, _, suffix = template.partition("{text}")
    head, tail = special_tokens_around(tokenizer)
    join = head_join(tokenizer, head, template)
    system = "{% for m in messages if m['role'] == 'system' %}{{ m['content'] }}{% endfor %}"
    user = "{% for m in messages if m['role'] != 'system' %}{{ m['content'] }}{% endfor %}"
    marker = "{# " + TEMPLATE_MARKER + json.dumps(template, ensure_ascii=False) + " #}"
    return marker + _literal(head + join) + system + _literal(prefix) + user + _literal(suffix) + _literal(tail)


def check_tokens(tokenizer: PreTrainedTokenizerBase, template: str) -> None:
    """Refuse a rendered template whose token ids for a probe sentence differ from ``tokenizer(filled)``,
    the authors' tokenization (see the module docstring); the error names both token lists."""
    rendered: Any = tokenizer.apply_chat_template(
        [{"role": "user", "content": PROBE_SENTENCE}], tokenize=True, return_dict=True
    )
    got = list(rendered["input_ids"])
    wanted = _ids(tokenizer, _fill(template, PROBE_SENTENCE), special=True)
    if got != wanted:
        raise PcctuneError(
            f"template {template!r} does not tokenize as tokenizer(filled template) does on "
            f"{type(tokenizer).__name__}: rendered {tokenizer.convert_ids_to_tokens(got)} "
            f"!= expected {tokenizer.convert_ids_to_tokens(wanted)}"
        )


def template_in(tokenizer: PreTrainedTokenizerBase | None) -> str | None:
    """The template a tokenizer's chat template was rendered from by ``render``, else ``None``."""
    chat_template = getattr(tokenizer, "chat_template", None)
    if not isinstance(chat_template, str) or not chat_template.startswith("{# " + TEMPLATE_MARKER):
        return None
    encoded = chat_template[len("{# " + TEMPLATE_MARKER) : chat_template.index(" #}")]
    return str(json.loads(encoded))


def install(module: Transformer, template: str | None) -> None:
    """Make ``module`` render every text through ``template`` (or plain again for ``None``).

    The tokenizer gets the rendered chat template; the module lists the ``message`` modality (flat
    messages: the content is the text itself) and restores the template's tail after truncation.
    Padding goes right, so decoder position ids count from the first real token with no help.
    """
    tokenizer = module.tokenizer
    if tokenizer is None:
        raise PcctuneError("this model has no tokenizer; a template needs one")
    text = module.modality_config.get("text") or {"method": "forward", "method_output_name": "last_hidden_state"}
    processing: dict[str, Any] = copy.deepcopy(dict(module.processing_kwargs or {}))
    if template is None:
        if template_in(tokenizer) is not None:
            tokenizer.chat_template = None
        module.modality_config = {"text": text}
        processing.pop("chat_template", None)
    else:
        tokenizer.chat_template = render(template, tokenizer)
        check_tokens(tokenizer, template)
        tokenizer.padding_side = "right"
        tokenizer.init_kwargs["padding_side"] = "right"  # saved with it: Llama-2-style tokenizers default to left
        module.modality_config = {"text": text, "message": {**text, "format": "flat"}}
        processing["chat_template"] = {"restore_suffix": True}
    module.processing_kwargs = processing  # type: ignore[assignment]
    module.input_formatter.message_format = "flat"
    module.input_formatter.supported_modalities = list(module.modality_config)
