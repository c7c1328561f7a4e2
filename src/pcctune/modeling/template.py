"""Prompt templates with the sentence in the middle, and the input module that applies them.

PromptEOL (Jiang et al., 2023, §3.1) embeds a sentence as the hidden state of the last token of
``This sentence : "[X]" means in one word:"``; PromptSTH and PromptSUM (Zhang et al., 2024;
Pcc-tuning §4.4, Table 4) change the tail. sentence-transformers only knows prompts that are
prefixes, so :class:`TemplateTransformer` extends its ``Transformer`` module:

- the template is part of the module config, so it is saved with the model and applied by
  ``encode``, the trainer's collator and evaluation alike;
- only the sentence is truncated: the template's head and tail always survive ``max_length``;
- ``sentence_max_tokens`` cuts the sentence alone before it fills the template, as the authors'
  ``cutoff_len`` does (32 tokens in stage 1, 64 in stage 2: tokenize the sentence without special
  tokens, keep the first N, decode);
- ``quantization`` (4-bit settings) is saved with the module, so the backbone reloads in 4-bit;
- for decoders, position ids are derived from the attention mask, so a left-padded batch and a
  right-padded batch give the same embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from transformers import PreTrainedTokenizerBase

from pcctune.errors import PcctuneError
from pcctune.modeling.quantization import bitsandbytes_config, keep_4bit_layout

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
        return self.text.split(SLOT)[0]

    @property
    def suffix(self) -> str:
        return self.text.split(SLOT)[1]

    def fill(self, sentence: str) -> str:
        return self.prefix + sentence + self.suffix


class TemplateTransformer(Transformer):
    """sentence-transformers ``Transformer`` that wraps every text input in a saved template.

    Args:
        template: a string with one ``{text}`` slot (or ``None`` for plain text).
        position_ids_from_mask: give the backbone ``position_ids = cumsum(mask) − 1`` so that
            decoder outputs do not depend on the padding side. Set for decoder-only models.
        sentence_max_tokens: cut the sentence alone to this many tokens before filling the template.
        quantization: 4-bit settings (:class:`~pcctune.modeling.quantization.QuantizationConfig`) of the backbone.
        **kwargs: everything ``sentence_transformers.base.modules.Transformer`` accepts.
    """

    config_keys: list[str] = [
        *Transformer.config_keys,
        "template",
        "position_ids_from_mask",
        "sentence_max_tokens",
        "quantization",
    ]

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
        if quantization:
            model_kwargs = dict(kwargs.get("model_kwargs") or {})
            model_kwargs["quantization_config"] = bitsandbytes_config(quantization)
            kwargs["model_kwargs"] = model_kwargs
        super().__init__(model_name_or_path, **kwargs)
        if quantization:
            keep_4bit_layout(self.model)
        self.template = Template(template).text if template is not None else None
        self.position_ids_from_mask = position_ids_from_mask
        self.sentence_max_tokens = sentence_max_tokens
        self.quantization = quantization

    # --- tokenization ------------------------------------------------------------------------

    @property
    def text_tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer (a text model always has one; sentence-transformers types it as optional)."""
        tokenizer = self.tokenizer
        if tokenizer is None:
            raise PcctuneError("this model has no tokenizer; pcctune encodes text only")
        return tokenizer

    def _ids(self, text: str, special: bool = True) -> list[int]:
        return list(self.text_tokenizer(text, add_special_tokens=special, verbose=False)["input_ids"])

    def _token_count(self, text: str) -> int:
        return len(self._ids(text))

    def cut_sentence(self, sentence: str) -> str:
        """The sentence cut to ``sentence_max_tokens`` tokens (as the authors' ``cutoff_len``), else unchanged."""
        limit = self.sentence_max_tokens
        if limit is None or len(ids := self._ids(sentence, special=False)) <= limit:
            return sentence
        cut = str(self.text_tokenizer.decode(ids[:limit]))
        again = self._ids(cut, special=False)  # some tokenizers (OPT's) re-encode a cut into more tokens
        return str(self.text_tokenizer.decode(again[:limit])) if len(again) > limit else cut

    def _fit(self, template: Template, sentence: str, max_length: int) -> list[int]:
        """Token ids of ``template.fill(sentence)``, cutting only the sentence to fit ``max_length``."""
        sentence = self.cut_sentence(sentence)
        ids = self._ids(template.fill(sentence))
        if len(ids) <= max_length:
            return ids
        overhead = self._token_count(template.fill(""))
        if overhead > max_length:
            raise PcctuneError(f"the template alone takes {overhead} tokens, more than max_seq_length={max_length}")
        sentence_ids = self._ids(sentence, special=False)
        budget = max_length - overhead
        while budget >= 0:
            cut = str(self.text_tokenizer.decode(sentence_ids[:budget], skip_special_tokens=True))
            ids = self._ids(template.fill(cut))
            if len(ids) <= max_length:
                return ids
            budget -= 1
        return self._ids(template.fill(""))

    def _tokenize_batch(self, template: Template, sentences: list[str], max_length: int) -> list[list[int]]:
        """Token ids of every filled template in one tokenizer call; only rows over ``max_length`` are refitted."""
        filled = [template.fill(self.cut_sentence(sentence)) for sentence in sentences]
        rows = [list(ids) for ids in self.text_tokenizer(filled, add_special_tokens=True, verbose=False)["input_ids"]]
        for index, ids in enumerate(rows):
            if len(ids) > max_length:
                rows[index] = self._fit(template, sentences[index], max_length)
        return rows

    def preprocess(
        self,
        inputs: Sequence[Any],
        prompt: str | None = None,
        processing_kwargs: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Tokenize text through the template; defer anything else to sentence-transformers."""
        handles = (self.template is not None or self.position_ids_from_mask or self.sentence_max_tokens) and inputs
        if not handles or not all(isinstance(item, str) for item in inputs):
            return super().preprocess(inputs, prompt=prompt, processing_kwargs=processing_kwargs, **kwargs)
        template = Template(self.template or SLOT)
        if prompt:
            template = Template(prompt + template.text)
        max_length = kwargs.get("max_length") or self.max_seq_length or self.text_tokenizer.model_max_length
        rows = self._tokenize_batch(template, list(inputs), max_length)
        features: dict[str, Any] = dict(self.text_tokenizer.pad({"input_ids": rows}, padding=True, return_tensors="pt"))
        if self.position_ids_from_mask:
            mask = features["attention_mask"]
            features["position_ids"] = (mask.long().cumsum(dim=-1) - 1).clamp(min=0)
        features["modality"] = "text"
        return features

    def __repr__(self) -> str:
        return f"TemplateTransformer(template={self.template!r}, architecture={self.model.__class__.__name__})"


def input_module(model: SentenceTransformer) -> TemplateTransformer:
    """The first module of ``model``: pcctune's input module, or sentence-transformers' ``Transformer``
    (its base class, with the same ``model``/``tokenizer``; read ``template`` with ``getattr``)."""
    return cast(TemplateTransformer, model[0])
