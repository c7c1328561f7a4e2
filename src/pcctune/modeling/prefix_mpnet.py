"""Deep prompts for MPNet, whose attention in transformers takes no prefix cache.

DCPCSE's deep prompts (Jiang et al. 2022, §2.1) are prefix tuning (Li & Liang 2021, §4.2; P-tuning v2):
every layer's attention attends to P trainable keys and values before the sentence's own. peft delivers
them as a ``past_key_values`` cache, which BERT and RoBERTa read; ``MPNetModel`` has no such argument and
silently ignores the cache, so its scores come out P columns short of the widened mask.

``accept_prefixes`` gives each ``MPNetSelfAttention`` of a model a per-call prefix: the layer's keys and
values are prepended to its own, exactly where a BERT layer puts a cached prefix. The prefixes of a call live in its
context (``prefixes_set``, a ``contextvars`` variable), not on the shared layers: calls in several threads at
once (CPU encoding's workers) each see their own, as a cache passed down the call would be. MPNet adds a relative
position bias to the scores; a prefix has no position, so its columns get a bias of 0, as a cached prefix
gets no position term in an absolute-position model. The weights and their names are unchanged (the layers
only change class), so the backbone saves and loads as plain MPNet.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch
from torch import nn
from transformers.models.mpnet.modeling_mpnet import MPNetSelfAttention
from typing_extensions import override

Prefix = tuple[torch.Tensor, torch.Tensor]

_PREFIXES: ContextVar[dict[nn.Module, Prefix] | None] = ContextVar("pcctune_mpnet_prefixes", default=None)
"""Inside ``prefixes_set``: each prefixed layer's (keys, values) for this call; ``None`` outside."""


class PrefixedMPNetSelfAttention(MPNetSelfAttention):
    """``MPNetSelfAttention`` that prepends ``prefix`` = (keys, values), each (batch, heads, P, head_dim)."""

    @property
    def prefix(self) -> Prefix | None:
        """This layer's keys and values in the current call (``prefixes_set``), else ``None``."""
        prefixes = _PREFIXES.get()
        return None if prefixes is None else prefixes.get(self)

    @override
    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_bias: torch.Tensor | None = None,
        output_attentions: bool = False,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, ...]:
        prefix = self.prefix
        if prefix is None:
            return super().forward(hidden_states, attention_mask, position_bias, output_attentions, **kwargs)
        prefix_keys, prefix_values = prefix
        shape = (*hidden_states.shape[:-1], -1, self.attention_head_size)
        q = self.q(hidden_states).view(shape).transpose(1, 2)
        k = torch.cat([prefix_keys.to(q.dtype), self.k(hidden_states).view(shape).transpose(1, 2)], dim=2)
        v = torch.cat([prefix_values.to(q.dtype), self.v(hidden_states).view(shape).transpose(1, 2)], dim=2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        if position_bias is not None:
            scores = scores + nn.functional.pad(position_bias, (prefix_keys.shape[2], 0))
        if attention_mask is not None:
            scores = scores + attention_mask  # already widened by the caller: (batch, 1, 1, P + L)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).transpose(1, 2).reshape(*hidden_states.shape[:-1], self.all_head_size)
        output = self.o(context)
        return (output, probs) if output_attentions else (output,)


def accept_prefixes(model: nn.Module) -> list[PrefixedMPNetSelfAttention]:
    """Turn every MPNet self-attention of ``model`` into a ``PrefixedMPNetSelfAttention``, in layer order."""
    layers = [module for module in model.modules() if isinstance(module, MPNetSelfAttention)]
    for layer in layers:
        layer.__class__ = PrefixedMPNetSelfAttention
    return layers  # type: ignore[return-value]


@contextmanager
def prefixes_set(layers: list[PrefixedMPNetSelfAttention], cache: Any) -> Iterator[None]:
    """Give each layer its keys and values from peft's prefix cache (a ``DynamicCache``) for one forward, in this
    context only."""
    prefixes: dict[nn.Module, Prefix] = {
        layer: (cached.keys, cached.values) for layer, cached in zip(layers, cache.layers, strict=True)
    }
    token = _PREFIXES.set(prefixes)
    try:
        yield
    finally:
        _PREFIXES.reset(token)
