"""The input lengths a stage trains under, and the model's own, which every save keeps.

A stage's ``max_seq_length`` and ``sentence_max_tokens`` (the authors' ``cutoff_len``, Pcc-tuning ``tune.py``)
cut training inputs and the dev evaluations during training only: a saved model (``final``, ``last``, a trainer
checkpoint) keeps the lengths it was loaded with, so its test evaluations and the next stage see whole sentences.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sentence_transformers import SentenceTransformer

from pcctune.modeling.template import sentence_cut


@dataclass(frozen=True)
class InputLengths:
    """A model's token budget (``max_seq_length``) and the cut of the sentence alone (``sentence_max_tokens``)."""

    max_seq_length: int | None
    sentence_max_tokens: int | None


def lengths_of(model: SentenceTransformer) -> InputLengths:
    """The lengths ``model`` encodes with now."""
    return InputLengths(model.max_seq_length, getattr(model[0], "sentence_max_tokens", None))


@contextmanager
def input_lengths(model: SentenceTransformer, lengths: InputLengths) -> Iterator[InputLengths]:
    """``model`` with ``lengths`` inside the block (yielding the lengths it had), its own again after."""
    own = lengths_of(model)
    _apply(model, lengths)
    try:
        yield own
    finally:
        _apply(model, own)


def _apply(model: SentenceTransformer, lengths: InputLengths) -> None:
    model.max_seq_length = lengths.max_seq_length
    sentence_cut(model, lengths.sentence_max_tokens)
