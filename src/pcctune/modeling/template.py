"""Prompt templates with the sentence in the middle, and the input module that applies what plain
sentence-transformers cannot.

PromptEOL (Jiang et al., 2023, §3.1) embeds a sentence as the hidden state of the last token of
``This sentence : "[X]" means in one word:"``; PromptSTH and PromptSUM (Zhang et al., 2024;
Pcc-tuning §4.4, Table 4) change the tail. The template is expressed with sentence-transformers'
own mechanism, the tokenizer's chat template (``pcctune.modeling.chat_template``), so a model with
a template is sentence-transformers' own ``Transformer`` (``apply_template``) and ``model.save``
writes a folder plain sentence-transformers loads. ``TemplateTransformer`` extends that
``Transformer`` with what the mechanism cannot express, and a folder it is saved in needs pcctune
to load (its ``save`` logs why):

- ``sentence_max_tokens`` cuts the sentence alone before it fills the template, as the authors'
  ``cutoff_len`` does (32 tokens in stage 1, 64 in stage 2: tokenize the sentence without special
  tokens, keep the first N, decode); a stage that cuts wraps a plain module for its duration only
  (``sentence_cut``);
- ``quantization`` (4-bit settings) is saved with the module, so the backbone reloads in 4-bit;
- for decoders, position ids are derived from the attention mask, so a left-padded batch and a
  right-padded batch give the same embeddings (a plain module pads right instead, where the
  backbone's default position ids are the same).

Only the sentence is truncated: the template's head comes first, and sentence-transformers restores
its tail after truncation (``restore_suffix``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from torch import Tensor, nn
from transformers import PreTrainedTokenizerBase

from pcctune.errors import PcctuneError
from pcctune.modeling import chat_template
from pcctune.modeling.quantization import bitsandbytes_config, keep_4bit_layout

logger = logging.getLogger(__name__)

SLOT = "{text}"

PRESETS: dict[str, str] = {
    "eol": 'This sentence : "{text}" means in one word:"',
    "sth": 'This sentence : "{text}" means something',
    "sum": 'This sentence : "{text}" can be summarized as',
}


@dataclass(frozen=True)
class Template:
    """A string with exactly one ``{text}`` slot, e.g. ``This sentence : "{text}" means in one word:"``."""

    text: str

    def __post_init__(self) -> None:
        count = self.text.count(SLOT)
        if count != 1:
            raise PcctuneError(
                f"template must contain exactly one {SLOT} slot (found {count}): {self.text!r}; "
                f"or use a preset: {', '.join(PRESETS)}"
            )

    @classmethod
    def parse(cls, spec: str) -> Template:
        """A preset name (``eol``, ``sth``, ``sum``) or a custom string with one ``{text}`` slot."""
        return cls(PRESETS.get(spec.lower(), spec))

    @property
    def prefix(self) -> str:
        """The text before the ``{text}`` slot."""
        return self.text.split(SLOT)[0]

    @property
    def suffix(self) -> str:
        """The text after the ``{text}`` slot, which truncation never cuts."""
        return self.text.split(SLOT)[1]

    def fill(self, sentence: str) -> str:
        """The template with ``sentence`` in its slot."""
        return self.prefix + sentence + self.suffix


_KEEP_SAVED = object()
_quantization_override: ContextVar[Any] = ContextVar("quantization_override", default=_KEEP_SAVED)


@contextmanager
def loading_quantization(settings: dict[str, Any] | None) -> Iterator[None]:
    """Within the block, a ``TemplateTransformer`` loads its backbone with ``settings`` (4-bit) or in full
    precision (``None``) whatever its saved config says: the authors evaluate a QLoRA adapter on the 16-bit
    base (``--load_kbit 16``), and ``pcctune eval --quantization nf4`` scores any model in 4-bit."""
    token = _quantization_override.set(settings)
    try:
        yield
    finally:
        _quantization_override.reset(token)


def text_tokenizer(module: Transformer) -> PreTrainedTokenizerBase:
    """An input module's tokenizer (a text model always has one; sentence-transformers types it as optional)."""
    tokenizer = module.tokenizer
    if tokenizer is None:
        raise PcctuneError("this model has no tokenizer; pcctune encodes text only")
    return tokenizer


def ensure_pad_token(tokenizer: PreTrainedTokenizerBase) -> None:
    """Give a tokenizer without a pad token (most decoders) its end-of-sequence token (or unknown token) as one."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token


def template_tokens(module: nn.Module) -> int:
    """The tokens an input module's template takes with an empty sentence, special tokens included: what
    truncation can never cut (0 without a template)."""
    tokenizer = getattr(module, "tokenizer", None)
    text = chat_template.template_in(tokenizer)
    return len(tokenizer(Template(text).fill(""), verbose=False)["input_ids"]) if tokenizer and text else 0


def check_budget(overhead: int, max_length: int | None) -> None:
    """Refuse a token budget that a template of ``overhead`` tokens alone fills: truncation could then keep no
    sentence token."""
    if overhead and max_length is not None and overhead >= max_length:
        raise PcctuneError(f"the template alone takes {overhead} tokens, more than max_seq_length={max_length}")


def native_config(config: dict[str, Any]) -> bool:
    """True when a ``TemplateTransformer`` with this saved config uses nothing plain sentence-transformers
    lacks: no sentence cut-off, no 4-bit settings (its template is already a chat template)."""
    return config.get("sentence_max_tokens") is None and not config.get("quantization")


PCCTUNE_KEYS = ("template", "position_ids_from_mask", "sentence_max_tokens", "quantization")
"""The settings ``TemplateTransformer`` saves beyond sentence-transformers' ``Transformer``'s."""


class TemplateTransformer(Transformer):
    """sentence-transformers ``Transformer`` that wraps every text input in a saved template.

    Args:
        template: a string with one ``{text}`` slot (or ``None`` for plain text).
        position_ids_from_mask: give the backbone ``position_ids = cumsum(mask) − 1`` so that
            decoder outputs do not depend on the padding side. Set for decoder-only models.
        sentence_max_tokens: cut the sentence alone to this many tokens before filling the template.
        quantization: 4-bit settings (``QuantizationConfig``) of the backbone.
        **kwargs: everything ``sentence_transformers.base.modules.Transformer`` accepts.
    """

    config_keys: list[str] = [*Transformer.config_keys, *PCCTUNE_KEYS]
    plain: Transformer | None = None
    """The plain module this one wraps for a sentence cut (``around``); ``None`` for a module built as itself."""
    _said_why = False

    def __init__(
        self,
        model_name_or_path: str,
        *,
        template: str | None = None,
        position_ids_from_mask: bool = False,
        sentence_max_tokens: int | None = None,
        quantization: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if (override := _quantization_override.get()) is not _KEEP_SAVED:
            quantization = override
        if quantization:
            model_kwargs = dict(kwargs.get("model_kwargs") or {})
            model_kwargs["quantization_config"] = bitsandbytes_config(quantization)
            kwargs["model_kwargs"] = model_kwargs
        super().__init__(model_name_or_path, **kwargs)
        if quantization:
            keep_4bit_layout(self.model)
        self.template = template
        self.position_ids_from_mask = position_ids_from_mask
        if position_ids_from_mask and self.tokenizer is not None:
            self.tokenizer.padding_side = "right"  # a native save (no mask-derived position ids) stays exact
        self.sentence_max_tokens = sentence_max_tokens
        self.quantization = quantization

    @property
    def template(self) -> str | None:
        """The template text, read from the tokenizer's chat template it is rendered into
        (``pcctune.modeling.chat_template``)."""
        return chat_template.template_in(self.tokenizer)

    @template.setter
    def template(self, value: str | None) -> None:
        text = Template.parse(value).text if value is not None else None  # a preset name (eol) or a template
        chat_template.install(self, text)
        self._template_tokens = template_tokens(self)

    @classmethod
    def around(cls, module: Transformer, sentence_max_tokens: int | None) -> TemplateTransformer:
        """sentence-transformers' own ``module`` as a ``TemplateTransformer`` that cuts each sentence to
        ``sentence_max_tokens``: the same backbone, tokenizer and settings (nothing is loaded or copied), with
        the backbone's own position ids, as ``module`` pads on the right; ``plain`` gives ``module`` back."""
        wrapper = cls.__new__(cls)
        wrapper.__dict__.update(module.__dict__)
        for registry in ("_parameters", "_buffers", "_modules"):  # its own registries, holding the same tensors
            wrapper.__dict__[registry] = dict(module.__dict__[registry])
        wrapper.__dict__["plain"] = module  # not a submodule: its weights are the wrapper's own
        wrapper._template_tokens = template_tokens(module)
        wrapper.position_ids_from_mask = False
        wrapper.sentence_max_tokens = sentence_max_tokens
        wrapper.quantization = None
        return wrapper

    @property
    def native(self) -> bool:
        """True when plain sentence-transformers reproduces this module (see ``native_config``)."""
        return native_config(self.get_config_dict())

    def pcctune_needed(self) -> str | None:
        """Why a folder this module is saved in needs pcctune to load (what plain sentence-transformers lacks),
        or ``None`` where ``pcctune.modeling.saving.nativize`` can write it as sentence-transformers' own."""
        if self.native:
            return None
        reasons = []
        if self.sentence_max_tokens is not None:
            reasons.append(f"it cuts the sentence alone to {self.sentence_max_tokens} tokens (sentence_max_tokens)")
        if self.quantization:
            reasons.append("its backbone loads in 4-bit with its saved settings (quantization)")
        return "; ".join(reasons) or f"it is pcctune's {type(self).__name__}"

    def save(self, output_path: str, *args: Any, **kwargs: Any) -> None:
        """Save as sentence-transformers' ``Transformer`` does; where the folder will need pcctune to load, the
        log says why (once per module)."""
        super().save(output_path, *args, **kwargs)
        reason = self.pcctune_needed()
        if reason is not None and not self._said_why:
            logger.warning("%s needs pcctune to load (pip install pcctune): %s", Path(output_path), reason)
            self._said_why = True

    # --- tokenization ------------------------------------------------------------------------

    @property
    def text_tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer (``text_tokenizer``)."""
        return text_tokenizer(self)

    def _ids(self, text: str) -> list[int]:
        return list(self.text_tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def cut_sentence(self, sentence: str) -> str:
        """The sentence cut to ``sentence_max_tokens`` tokens (as the authors' ``cutoff_len``), else unchanged."""
        limit = self.sentence_max_tokens
        if limit is None or len(ids := self._ids(sentence)) <= limit:
            return sentence
        cut = str(self.text_tokenizer.decode(ids[:limit]))
        again = self._ids(cut)  # some tokenizers (OPT's) re-encode a cut into more tokens
        return str(self.text_tokenizer.decode(again[:limit])) if len(again) > limit else cut

    def check_budget(self, max_length: int | None) -> None:
        """Refuse a token budget the template alone fills (``check_budget``)."""
        check_budget(self._template_tokens, max_length)

    def preprocess(
        self,
        inputs: Sequence[Any],
        prompt: str | None = None,
        processing_kwargs: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Cut each sentence (``sentence_max_tokens``), let sentence-transformers render the template, add
        position ids counted from the first real token (decoders)."""
        if self.sentence_max_tokens and all(isinstance(item, str) for item in inputs):
            inputs = [self.cut_sentence(item) for item in inputs]
        if self._template_tokens:
            self.check_budget(kwargs.get("max_length") or self.max_seq_length)
        features = super().preprocess(inputs, prompt=prompt, processing_kwargs=processing_kwargs, **kwargs)
        mask = features.get("attention_mask")
        if self.position_ids_from_mask and isinstance(mask, Tensor):  # not for unpadded lists (token counts)
            features["position_ids"] = (mask.long().cumsum(dim=-1) - 1).clamp(min=0)
        return features

    def __repr__(self) -> str:
        return f"TemplateTransformer(template={self.template!r}, architecture={self.model.__class__.__name__})"


def input_module(model: SentenceTransformer) -> TemplateTransformer:
    """The first module of ``model``: pcctune's input module, or sentence-transformers' ``Transformer``
    (its base class, with the same ``model``/``tokenizer``; read ``template`` with ``getattr``)."""
    return cast(TemplateTransformer, model[0])


def model_template(model: SentenceTransformer) -> str | None:
    """The template a model applies: the one its tokenizer's chat template was rendered from, for pcctune's
    input module and for a model saved as plain sentence-transformers alike."""
    return chat_template.template_in(getattr(model[0], "tokenizer", None))


def sentence_cut(model: SentenceTransformer, limit: int | None) -> None:
    """Cut each sentence to ``limit`` tokens before it fills the template (``None``: whole sentences again).

    pcctune's module takes the cut itself. sentence-transformers' own ``Transformer`` with a template cannot
    express one, so it is wrapped in a ``TemplateTransformer`` over the same backbone while a cut is in force
    (a stage's ``sentence_max_tokens``) and is the model's input module again once it is lifted: a model that
    cuts nothing stays sentence-transformers' own, and ``model.save`` writes a folder it loads."""
    name, module = next(iter(model._modules.items()))
    if isinstance(module, TemplateTransformer) and module.plain is not None and limit is None:
        model._modules[name] = module.plain.train(module.training)  # in the mode the wrapper was left in
    elif isinstance(module, TemplateTransformer):
        module.sentence_max_tokens = limit
    elif limit is not None:
        if not isinstance(module, Transformer) or type(module) is not Transformer or model_template(model) is None:
            raise PcctuneError(
                "sentence_max_tokens cuts the sentence before it fills the template, and this model has none: "
                "give it a template (e.g. eol), or use max_seq_length"
            )
        model._modules[name] = TemplateTransformer.around(module, limit)


def apply_template(model: SentenceTransformer, template: str | None) -> SentenceTransformer:
    """Make any loaded model wrap every input in ``template`` (a preset ``eol`` / ``sth`` / ``sum``, or a string
    with one ``{text}``; PromptEOL §3.1), through sentence-transformers' own chat-template mechanism, so
    ``encode``, training and a plain save all apply it. ``None`` removes it. A tokenizer without a pad token
    (most decoders) gets its end-of-sequence token as one, as ``build_model`` does.
    Returns the model."""
    module = model[0]
    tokenizer = getattr(module, "tokenizer", None)
    if tokenizer is not None:
        ensure_pad_token(tokenizer)
    if isinstance(module, TemplateTransformer):
        module.template = template
    elif isinstance(module, Transformer):
        chat_template.install(module, Template.parse(template).text if template is not None else None)
    else:
        raise PcctuneError(f"a template needs a Transformer input module, not {type(module).__name__}")
    return model
