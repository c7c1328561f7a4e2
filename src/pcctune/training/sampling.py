"""Source-homogeneous groups: every batch (the Pearson group) holds pairs of one source only.

Pearson's r is a within-group statistic; the STS-B and SICK pairs of the stage-2 set have different
score distributions (0–5 vs rescaled 1–5 relatedness, different annotators). Drawing each group
from one source makes every correlation a within-source one (the other remedy, for mixed
groups, is the ``pearson_by_source`` loss). The source id rides in the second label column.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch


class SourceBatchSampler:
    """Seeded batches of one source each, reshuffled every epoch; sources interleaved at random."""

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: Any = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
    ) -> None:
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.seed = seed
        self.epoch = 0
        by_source: dict[int, list[int]] = {}
        for index, label in enumerate(dataset["score"]):
            by_source.setdefault(int(label[1]), []).append(index)
        self.by_source = by_source

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose batches come next (the trainer calls it at each epoch): each epoch's shuffle has its own
        seed."""
        self.epoch = epoch

    def _batches(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        batches = []
        for members in self.by_source.values():
            order = [members[i] for i in torch.randperm(len(members), generator=generator).tolist()]
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                if len(batch) == self.batch_size or not self.drop_last:
                    batches.append(batch)
        return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]

    def __iter__(self) -> Iterator[list[int]]:
        yield from self._batches()

    def __len__(self) -> int:
        return len(self._batches())
