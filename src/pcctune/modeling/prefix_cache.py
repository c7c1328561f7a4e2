"""The template's prefix run once: a decoder encodes each batch from the cached key/values of the tokens before
``{text}``.

Under a prompt template (PromptEOL §3.1, Pcc-tuning §3) every input starts with the same tokens, e.g. PromptEOL's
``This sentence : "``. A decoder's attention is causal, so their hidden states and key/values do not depend on the
sentence that follows: ``CachedPrefix`` computes them once per ``encode_texts``
call (the weights may have changed between calls, as during training), and each batch runs only its remaining
tokens over a copy of that cache. The pooling then sees the prefix's hidden states and the batch's, as if the whole
input had run. A batch is run this way only when every row's tokens begin with the prefix's (a tokenizer could merge
the last prefix token with a sentence's first character); otherwise it runs whole. Embeddings equal the plain
forward's up to float rounding (tested on byte-level and Metaspace tokenizers).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from torch import Tensor

from pcctune.modeling.backends import RuntimeBackbone
from pcctune.modeling.build import is_decoder_only
from pcctune.modeling.template import model_template

PROBE_SENTENCES = ("a", "Two dogs run.", '"Quoted" text')
"""Sentences whose templated token ids share exactly the template's prefix."""


@dataclass
class CachedPrefix:
    """The prefix's token ids, its backbone cache (batch of one) and its last hidden states."""

    ids: Tensor
    cache: Any
    hidden: Tensor

    def covers(self, input_ids: Tensor) -> bool:
        """True when every row of the batch begins with the prefix's tokens (and has tokens after them)."""
        size = len(self.ids)
        return input_ids.shape[1] > size and bool((input_ids[:, :size] == self.ids.to(input_ids.device)).all())

    def embed(self, model: SentenceTransformer, features: dict[str, Any]) -> Tensor:
        """The batch's sentence embeddings: the backbone runs the tokens after the prefix over its cache."""
        size, rows = len(self.ids), features["input_ids"].shape[0]
        cache = copy.deepcopy(self.cache)
        cache.batch_repeat_interleave(rows)
        rest = {**features, "input_ids": features["input_ids"][:, size:]}
        if "position_ids" in features:
            rest["position_ids"] = features["position_ids"][:, size:]
        out = model[0](rest, past_key_values=cache, use_cache=True)
        hidden = torch.cat([self.hidden.expand(rows, -1, -1).to(out["token_embeddings"]), out["token_embeddings"]], 1)
        pooled = {**features, "token_embeddings": hidden}
        for module in list(model)[1:]:
            pooled = module(pooled)
        return pooled["sentence_embedding"]


def prefix_ids(model: SentenceTransformer, prompt: str | None = None) -> list[int]:
    """The token ids every templated input under ``prompt`` starts with (the longest common start of a few probes)."""
    module: Any = model[0]  # its preprocess renders the template and applies the prompt
    rows = [module.preprocess([probe], prompt=prompt)["input_ids"][0].tolist() for probe in PROBE_SENTENCES]
    common: list[int] = []
    for column in zip(*rows, strict=False):
        if len(set(column)) > 1:
            break
        common.append(column[0])
    return common


def cached_prefix(model: SentenceTransformer, prompt: str | None = None) -> CachedPrefix | None:
    """The prefix cache of a decoder under a template of at least two prefix tokens (the prompt's included: a
    chat template renders it as a system message before the template's head); ``None`` for anything else.

    The input module is pcctune's (position ids from the mask) or a plain sentence-transformers ``Transformer``
    that pads on the right (a model saved natively, as ``pcctune icl`` saves one): either way a row's positions
    continue from the prefix's. Encoders attend both ways, a left-padded plain module would put pads before the
    prefix, and an ONNX or OpenVINO backend or a module with a forward of its own (continuous prompts) takes no
    key/value cache: all are encoded whole."""
    module: Any = model[0]
    if not isinstance(module, Transformer) or module.backend != "torch" or isinstance(module.model, RuntimeBackbone):
        return None  # ST's own ONNX / OpenVINO backends, or pcctune's (``pcctune eval --backend``)
    if type(module).forward is not Transformer.forward:
        return None  # a forward of its own (DCPCSE's continuous prompts) takes no key/value cache: encoded whole
    if not is_decoder_only(module.model.config) or not model_template(model):
        return None
    tokenizer = getattr(module, "tokenizer", None)
    if not getattr(module, "position_ids_from_mask", False) and getattr(tokenizer, "padding_side", "") != "right":
        return None
    ids = prefix_ids(model, prompt)
    if len(ids) < 2:
        return None
    input_ids = torch.tensor([ids], device=model.device)
    positions = torch.arange(len(ids), device=model.device)[None]
    features = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "position_ids": positions}
    out = module.model(**features, use_cache=True, return_dict=True)
    return CachedPrefix(input_ids[0], out.past_key_values, out.last_hidden_state)
