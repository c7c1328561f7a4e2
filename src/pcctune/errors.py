"""The one exception type users see: bad input, reported as a one-line message."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError


class PcctuneError(Exception):
    """A user-facing error: bad input, missing data, unknown model.

    The CLI prints ``error: <message>`` and exits with code 2 instead of a traceback.
    """


class Interrupted(Exception):  # noqa: N818  (a user's Ctrl-C, not an error)
    """A run stopped by Ctrl-C. The message says what was kept and how to continue; exit code 130."""


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message, for a one-line ``PcctuneError``; its type's name where it has none."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def some_of(items: Sequence[object], shown: int) -> str:
    """The first ``shown`` of ``items``, comma-separated, and how many more (``a, b, c and 4 more``), so that a message
    naming them stays one line."""
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(map(str, items[:shown])) + more


def closest(value: object, choices: Sequence[str]) -> str:
    """``; did you mean `NAME`?`` for the one of ``choices`` closest to ``value`` (``difflib``'s ratio of at least
    0.6), else nothing: the end of a refusal of an unknown name, where a typo is the likely cause."""
    close = difflib.get_close_matches(str(value), list(choices), n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


def unknown(what: str, value: object, choices: Sequence[str], also: str = "") -> str:
    """The one-line refusal of a ``value`` not among ``choices``: ``unknown WHAT 'VALUE'; choose from A, B`` (``also``:
    what else is accepted, appended), and the closest choice where one is close (``closest``)."""
    return f"unknown {what} {value!r}; choose from {', '.join(choices)}{also}{closest(value, choices)}"


def first_refusal(error: ValidationError, model: type[BaseModel] | None = None) -> tuple[str, str]:
    """The parts of a one-line message for a pydantic ``ValidationError``: where its first error lies (the dotted
    location, empty at the top level) and what it says, without pydantic's ``Value error, `` prefix. Given the
    ``model`` that refused it, a field it does not have gets the closest field name it does
    (``did you mean `learning_rate`?``), and such a typo is the error named (``nme:`` is a misspelt ``name``, not a
    missing one)."""

    def hint(refusal: Any) -> str:  # a field ``model`` lacks: the closest it has, where one is close
        if model is None or refusal["type"] != "extra_forbidden":
            return ""
        return _closest_field(model, refusal["loc"])

    errors = error.errors()
    first = next((refusal for refusal in errors if hint(refusal)), errors[0])
    return ".".join(str(part) for part in first["loc"]), first["msg"].removeprefix("Value error, ") + hint(first)


def _closest_field(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """`` (did you mean `NAME`?)`` for the field of the model at ``loc``'s parent closest to its last part
    (``difflib``'s ratio of at least 0.6), else nothing."""
    return closest(loc[-1], _fields_at(model, loc[:-1]))


def _fields_at(model: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The field names of the model found by following ``path`` (field names and list indexes) from ``model``."""
    current: Any = model
    for part in path:
        field = current.model_fields.get(part) if isinstance(part, str) else None
        current = _model_in(current if field is None and isinstance(part, int) else getattr(field, "annotation", None))
        if current is None:
            return []
    return list(current.model_fields)


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds (itself, a list's items, a union's one model), else ``None``."""
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return annotation
    if typing.get_origin(annotation) in (list, typing.Union, types.UnionType):
        return next((m for arg in typing.get_args(annotation) if (m := _model_in(arg)) is not None), None)
    return None
