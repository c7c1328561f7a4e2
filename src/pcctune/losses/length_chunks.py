"""The columns of a training batch embedded in chunks of similar token length instead of one padded block.

sentence-transformers' collator pads every column to its longest text, so a batch of short STS sentences runs
through the model at the length of its longest one: on the leakage-filtered STS-B + SICK-R set, batches of 64
pairs carry 2.6 padded tokens for every real one. A text's embedding does not depend on the other texts of its
batch (padding is masked out), so the rows of all columns can be sorted by length, cut into chunks each padded
only to its own longest row, embedded chunk by chunk, and put back in order: the same embeddings up to float
rounding, the same gradients (autograd runs back through every chunk), 0.43 of the tokens at batch 64 (1.12 a
real token; ``benchmarks/results/speed/probe_length_chunk_tokens.py``).

Where the cuts go is chosen exactly (``chunk_bounds``, a dynamic program over the sorted lengths): each
chunk costs its padded tokens plus a fixed overhead, in tokens, for the extra forward pass.

Columns of token-shaped tensors (``input_ids``, ``attention_mask``, ``token_type_ids``...) padded on either side
are cut, each row to its real tokens, and every chunk is padded again as the model's tokenizer pads
(``Padding``: its side, its pad id); other entries (sentence-transformers' ``modality``) are passed on as
they are, and only where every column has the same entries. Any other input (a tensor of another shape, columns
padded on different sides) is embedded as one block per column, as sentence-transformers does.

When chunks are used is the stage's ``length_chunks`` (``LengthChunker``, which says once what it does):

- ``auto`` (the default): in a single process. Processes that train together must run the same number of
  forward passes: DDP broadcasts buffers in every forward, FSDP and ZeRO-3 gather parameters in every forward, so
  a process with more chunks than another waits for a collective that never comes. ``auto`` embeds each column
  whole there (one forward per column on every process).
- ``on``: also under several processes, with the same number of chunks on each: one all-reduce per batch agrees
  on the most chunks any process needs, and each process splits its own chunks to that count
  (``split_bounds``); when a process cannot (a batch that cannot be cut, too few rows), every process embeds
  its columns whole.
- ``off``: never.

Wrapper losses that hand state between calls of the inner loss through the feature dicts (sentence-transformers'
``AdaptiveLayerLoss`` and ``Matryoshka2dLoss``, which mark it with ``column_merging_disabled()``) get each column
whole, the very dicts they passed, as sentence-transformers' own column merging does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.distributed as dist
import torch.nn.functional as F
from sentence_transformers.base.losses.merged_forward import merge_feature_batches
from torch import Tensor

from pcctune.distributed import get_rank, get_world_size

logger = logging.getLogger(__name__)

Features = dict[str, Any]  # token tensors, and entries such as sentence-transformers' "modality"
Embed = Callable[[Features], Tensor]
LengthChunks = Literal["auto", "on", "off"]
Side = Literal["right", "left"]

CHUNK_OVERHEAD_TOKENS = 64  # what one more forward pass costs, counted in tokens (kernel calls, smaller GEMMs)
_CANNOT_CUT = 1 << 62  # the chunk count a process reports when its batch cannot be cut


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


def split_bounds(bounds: Sequence[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """``bounds`` cut further until there are ``count`` chunks, each time the chunk of most rows into halves (so
    that processes run the same number of forward passes); ``count`` must not exceed the rows."""
    split = list(bounds)
    while len(split) < count:
        widest = max(range(len(split)), key=lambda i: split[i][1] - split[i][0])
        start, end = split[widest]
        split[widest : widest + 1] = [(start, (start + end) // 2), ((start + end) // 2, end)]
    return split


@dataclass(frozen=True)
class Padding:
    """How the model's tokenizer pads: the side, and each token tensor's value at a padded position (those not
    named: 0, as an attention mask's)."""

    side: Side = "right"
    values: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, tokenizer: Any) -> Padding:
        """A Hugging Face tokenizer's padding: ``input_ids`` by its pad id, ``token_type_ids`` by its pad type."""
        pad_id = tokenizer.pad_token_id
        return cls(
            "left" if tokenizer.padding_side == "left" else "right",
            {"input_ids": 0 if pad_id is None else pad_id, "token_type_ids": tokenizer.pad_token_type_id},
        )


@dataclass(frozen=True)
class _Plan:
    """A batch that can be cut: its rows longest first as (tokens, column, row), the side its chunks are padded
    on, the entries every chunk carries as they are, the tensors cut, and the cheapest chunks."""

    rows: list[tuple[int, int, int]]
    side: Side
    shared: Features
    tensors: list[str]
    bounds: list[tuple[int, int]]


def _lengths_and_sides(features: Features) -> tuple[list[int], set[Side]] | str:
    """Each row's token count and the sides the column's padding can be on (both when no row is padded); or why
    the column cannot be cut."""
    mask = features.get("attention_mask")
    if not isinstance(mask, Tensor) or mask.dim() != 2:
        return "a column has no two-dimensional attention mask"
    if any(isinstance(value, Tensor) and value.shape != mask.shape for value in features.values()):
        return "a column holds a tensor that is not token-shaped"
    lengths = mask.sum(dim=1, keepdim=True)
    positions = torch.arange(mask.shape[1], device=mask.device).unsqueeze(0)
    real = mask.bool()
    sides: set[Side] = set()
    if torch.equal(real, positions < lengths):
        sides.add("right")
    if torch.equal(real, positions >= mask.shape[1] - lengths):
        sides.add("left")
    if not sides:
        return "an attention mask has masked positions between real tokens"
    return lengths.squeeze(1).tolist(), sides


def _shared_entries(columns: Sequence[Features]) -> Features | None:
    """The entries that are not tensors (the same in every column), where all columns have the same keys."""
    if not columns or any(features.keys() != columns[0].keys() for features in columns):
        return None
    shared = [{key: value for key, value in features.items() if not isinstance(value, Tensor)} for features in columns]
    return shared[0] if all(entries == shared[0] for entries in shared) else None


def _plan(columns: Sequence[Features], padding: Padding) -> _Plan | str:
    """How the batch is cut (its cheapest chunks), or why it cannot be."""
    shared = _shared_entries(columns)
    if shared is None:
        return "the columns have different entries"
    lengths: list[list[int]] = []
    sides: set[Side] = {"right", "left"}
    for features in columns:
        found = _lengths_and_sides(features)
        if isinstance(found, str):
            return found
        lengths.append(found[0])
        sides &= found[1]
    if not sides:
        return "the columns are padded on different sides"
    side = padding.side if padding.side in sides else sides.pop()
    rows = [(n, column, row) for column, ns in enumerate(lengths) for row, n in enumerate(ns)]
    rows.sort(key=lambda item: -item[0])
    tensors = [key for key in columns[0] if key not in shared]
    return _Plan(rows, side, shared, tensors, chunk_bounds([n for n, _, _ in rows]))


def _agreed_bounds(plan: _Plan | str, device: torch.device) -> list[tuple[int, int]] | str:
    """This process's chunks, as many as any process of the group needs (one all-reduce every process runs);
    or why every process embeds its columns whole: some process cannot cut its batch into that many chunks."""
    cuts = (len(plan.bounds), len(plan.rows)) if isinstance(plan, _Plan) else (_CANNOT_CUT, 0)
    agreed = torch.tensor([cuts[0], -cuts[1]], dtype=torch.int64, device=device)
    dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
    most, fewest_rows = int(agreed[0]), -int(agreed[1])
    if isinstance(plan, str):
        return plan
    if most > fewest_rows:
        return "another process's batch cannot be cut into as many chunks as this one's"
    return split_bounds(plan.bounds, most)


def _embed_chunks(
    embed: Embed, columns: Sequence[Features], plan: _Plan, bounds: Sequence[tuple[int, int]], padding: Padding
) -> list[Tensor]:
    """Each column's embeddings, computed chunk by chunk and put back in the columns' order."""
    pieces = [
        embed(
            plan.shared
            | {
                key: _gather(columns, plan.rows[start:end], key, plan.side, padding.values.get(key, 0))
                for key in plan.tensors
            }
        )
        for start, end in bounds
    ]
    embedded = torch.cat(pieces)
    place = {(column, row): index for index, (_, column, row) in enumerate(plan.rows)}
    return [
        embedded.index_select(
            0, torch.tensor([place[column, row] for row in range(len(features["attention_mask"]))]).to(embedded.device)
        )
        for column, features in enumerate(columns)
    ]


def _gather(
    columns: Sequence[Features], chunk: Sequence[tuple[int, int, int]], key: str, side: Side, pad: int
) -> Tensor:
    """The chunk's rows of ``key`` in the chunk's order: each row's real tokens, padded with ``pad`` on ``side`` to
    the chunk's longest row, its first."""
    width = chunk[0][0]
    rows = []
    for tokens, column, row in chunk:
        values = columns[column][key][row]
        if side == "right":
            rows.append(F.pad(values[:tokens], (0, width - tokens), value=pad))
        else:
            rows.append(F.pad(values[values.shape[0] - tokens :], (width - tokens, 0), value=pad))
    return torch.stack(rows)


def _columns_kept_whole() -> bool:
    """Whether a wrapper loss asked, by ``column_merging_disabled()``, for every column in its own dicts: then
    sentence-transformers' ``merge_feature_batches`` refuses even two equal token columns (the block's contract)."""
    column = {"input_ids": torch.zeros(1, 1, dtype=torch.long), "attention_mask": torch.ones(1, 1, dtype=torch.long)}
    return merge_feature_batches([column, column]) is None


class LengthChunker:
    """How a loss embeds the columns of its batches: in length chunks or whole, as ``mode`` (a stage's
    ``length_chunks``) and the processes training together allow (see the module's docstring). Logs once what it
    does, and once each reason it embeds columns whole."""

    def __init__(self, mode: LengthChunks = "auto") -> None:
        self.mode = mode
        self._said: set[str] = set()

    def __call__(self, embed: Embed, columns: Sequence[Features], padding: Padding | None = None) -> list[Tensor]:
        """Each column's embeddings by ``embed``, in the columns' own order: computed over chunks of similar length
        where the setting and the batch allow (every process of a distributed run cutting at the same bounds), else each
        column whole; the choice said once in the log."""
        padding = padding or Padding()
        world = get_world_size()
        whole = self._whole_by_setting(world)
        if whole is not None:
            self.say(*whole)
            return [embed(features) for features in columns]
        plan = _plan(columns, padding)
        if world > 1:
            bounds = _agreed_bounds(plan, _device(columns))
        else:
            bounds = plan if isinstance(plan, str) else plan.bounds
        if isinstance(bounds, str) or isinstance(plan, str):
            self.say(logging.WARNING, f"length chunks: a batch embedded whole, one block per column ({bounds})")
            return [embed(features) for features in columns]
        each = f", the same number on each of {world} processes" if world > 1 else ""
        self.say(logging.INFO, f"length chunks on: training batches embedded in chunks of similar length{each}")
        return _embed_chunks(embed, columns, plan, bounds, padding)

    def _whole_by_setting(self, world: int) -> tuple[int, str] | None:
        """The level and line of why every batch is embedded whole, whatever it holds; ``None`` when batches are
        chunked where they can be."""
        if self.mode == "off":
            return logging.INFO, "length chunks off (length_chunks: off): each column embedded in one padded block"
        if _columns_kept_whole():
            return (
                logging.INFO,
                "length chunks off inside a wrapper loss that hands state between its calls through the feature "
                "dicts (sentence-transformers' AdaptiveLayerLoss, Matryoshka2dLoss): each column embedded whole",
            )
        if world > 1 and self.mode == "auto":
            return (
                logging.WARNING,
                f"length chunks off: {world} processes train together and must run the same number of forward "
                "passes (DDP's buffer broadcast, FSDP and ZeRO-3 gathers run in every forward); length_chunks: on "
                "chunks batches with the same count on every process",
            )
        return None

    def say(self, level: int, line: str) -> None:
        """Log ``line`` once (from the first process only)."""
        if line not in self._said and get_rank() == 0:
            logger.log(level, line)
        self._said.add(line)


def _device(columns: Sequence[Features]) -> torch.device:
    """Where the batch's tensors are: where a collective over it runs (NCCL needs the GPU's)."""
    return next((v.device for f in columns for v in f.values() if isinstance(v, Tensor)), torch.device("cpu"))
