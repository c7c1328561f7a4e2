"""Changes to a user's model for the time of a block, safe when blocks on the same model overlap.

Encoding puts a model in eval mode and routes its linear layers through oneDNN (each layer's ``__class__``) for the
call, and undoes both after. Two calls on one model at once, in two threads, would each save what they found and
put it back at their end: the first to end would restore the mode or the classes under the other, and the last
would "restore" the other's changes for good. ``shared_changes`` counts the blocks instead: the first block to
change an object makes the change, later overlapping blocks share it, and the last one to end undoes it. Code
outside pcctune that uses the same model meanwhile still sees the change (a model in eval mode, layers of another
class computing the same products).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from threading import Lock
from typing import Any

Undo = Callable[[], None]


@dataclass
class _Held:
    """One change in force: its object (kept alive, so that no other object takes its ``id``), how to undo it, and
    how many blocks hold it."""

    owner: Any
    undo: Undo
    blocks: int


_LOCK = Lock()
_HELD: dict[tuple[int, str], _Held] = {}


@contextmanager
def shared_changes(owners: Iterable[Any], kind: str, change: Callable[[Any], Undo | None]) -> Iterator[int]:
    """For each of ``owners``, a share in the change of this ``kind`` an overlapping block made, else
    ``change(owner)``: it makes the change and returns its undo (``None``: nothing to change on that one). The last
    block holding an owner's change undoes it. Yields how many owners the block changed or shares."""
    keys: list[tuple[int, str]] = []
    with _LOCK:
        for owner in owners:
            key = (id(owner), kind)
            held = _HELD.get(key)
            if held is not None:
                held.blocks += 1
            else:
                undo = change(owner)
                if undo is None:
                    continue
                _HELD[key] = _Held(owner, undo, 1)
            keys.append(key)
    try:
        yield len(keys)
    finally:
        with _LOCK:
            for key in keys:
                held = _HELD[key]
                held.blocks -= 1
                if held.blocks == 0:
                    del _HELD[key]
                    held.undo()
