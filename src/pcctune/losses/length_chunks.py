"""The columns of a training batch embedded in chunks of similar token length instead of one padded block.

sentence-transformers' collator pads every column to its longest text, so a batch of short STS sentences runs
through the model at the length of its longest one: on the leakage-filtered STS-B + SICK-R set, batches of 64
pairs carry 2.6 padded tokens for every real one. A text's embedding does not depend on the other texts of its
batch (padding is masked out), so the rows of all columns can be sorted by length, cut into chunks each padded
only to its own longest row, embedded chunk by chunk, and put back in order: the same embeddings up to float
rounding, the same gradients (autograd runs back through every chunk), about half the tokens.

Where the cuts go is chosen exactly (:func:`chunk_bounds`, a dynamic program over the sorted lengths): each
chunk costs its padded tokens plus a fixed overhead, in tokens, for the extra forward pass.

Only right-padded columns of token-shaped tensors (``input_ids``, ``attention_mask``, ``token_type_ids``...) are
cut, their other entries (sentence-transformers' ``modality``) passed on as they are, and only where every column
has the same entries; any other input (left padding, a tensor of another shape) is embedded as one block, as
before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

Features = dict[str, Any]  # token tensors, and entries such as sentence-transformers' "modality"

CHUNK_OVERHEAD_TOKENS = 64  # what one more forward pass costs, counted in tokens (kernel calls, smaller GEMMs)


def chunk_bounds(sorted_lengths: Sequence[int], overhead: int = CHUNK_OVERHEAD_TOKENS) -> list[tuple[int, int]]:
    """The ``[start, end)`` chunks of lengths sorted longest first that minimize Σ (rows × first length + overhead).

    A cut between two equal lengths only adds an overhead, so the cuts are searched among the places where the
    length changes: quadratic in the number of distinct lengths, not of rows."""
    count = len(sorted_lengths)
    starts = [i for i in range(count) if i == 0 or sorted_lengths[i] != sorted_lengths[i - 1]] + [count]
    groups = len(starts) - 1
    best, cut = [0] * (groups + 1), [0] * (groups + 1)  # best[g]: least cost of the first g groups; cut[g]: its last
    for end in range(1, groups + 1):
        best[end], cut[end] = min(
            (best[g] + (starts[end] - starts[g]) * sorted_lengths[starts[g]] + overhead, g) for g in range(end)
        )
    bounds: list[tuple[int, int]] = []
    while groups > 0:
        bounds.append((starts[cut[groups]], starts[groups]))
        groups = cut[groups]
    return bounds[::-1]


def _right_padded_lengths(features: Features) -> list[int] | None:
    """Each row's token count where every tensor is token-shaped and the mask is right padding; else None."""
    mask = features.get("attention_mask")
    if not isinstance(mask, Tensor) or mask.dim() != 2:
        return None
    if any(isinstance(value, Tensor) and value.shape != mask.shape for value in features.values()):
        return None
    lengths = mask.sum(dim=1)
    positions = torch.arange(mask.shape[1], device=mask.device)
    if not torch.equal(mask.bool(), positions.unsqueeze(0) < lengths.unsqueeze(1)):
        return None
    return lengths.tolist()


def _shared_entries(columns: Sequence[Features]) -> Features | None:
    """The entries that are not tensors (the same in every column), where all columns have the same keys."""
    if not columns or any(features.keys() != columns[0].keys() for features in columns):
        return None
    shared = [{key: value for key, value in features.items() if not isinstance(value, Tensor)} for features in columns]
    return shared[0] if all(entries == shared[0] for entries in shared) else None


def embed_in_length_chunks(embed: Callable[[Features], Tensor], columns: Sequence[Features]) -> list[Tensor]:
    """Each column's embeddings, as ``[embed(f) for f in columns]`` gives them, computed over length-sorted chunks
    of the rows of all columns (see the module's docstring); columns that cannot be cut are embedded whole."""
    lengths = [_right_padded_lengths(features) for features in columns]
    shared = _shared_entries(columns)
    if shared is None or any(ns is None for ns in lengths):
        return [embed(features) for features in columns]
    rows = [(n, column, row) for column, ns in enumerate(lengths) for row, n in enumerate(ns or [])]
    rows.sort(key=lambda item: -item[0])
    tensors = [key for key in columns[0] if key not in shared]
    pieces = [
        embed(shared | {key: _gather(columns, rows[start:end], key) for key in tensors})
        for start, end in chunk_bounds([n for n, _, _ in rows])
    ]
    embedded = torch.cat(pieces)
    place = {(column, row): index for index, (_, column, row) in enumerate(rows)}
    return [
        embedded.index_select(0, torch.tensor([place[column, row] for row in range(len(ns or []))]).to(embedded.device))
        for column, ns in enumerate(lengths)
    ]


def _gather(columns: Sequence[Features], chunk: Sequence[tuple[int, int, int]], key: str) -> Tensor:
    """The chunk's rows of ``key`` in the chunk's order, cut or padded with zeros (masked positions) to the chunk's
    longest row, its first."""
    width = chunk[0][0]
    cut = [columns[column][key][row, :width] for _, column, row in chunk]
    return torch.stack([F.pad(values, (0, width - len(values))) for values in cut])
