"""The one exception type users see: bad input, reported as a one-line message."""

from __future__ import annotations

import difflib
import types
import typing
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


def first_refusal(error: ValidationError, model: type[BaseModel] | None = None) -> tuple[str, str]:
    """The parts of a one-line message for a pydantic ``ValidationError``: where its first error lies (the dotted
    location, empty at the top level) and what it says, without pydantic's ``Value error, `` prefix. Given the
    ``model`` that refused it, a field it does not have gets the closest field name it does
    (``did you mean `learning_rate`?``), and such a typo is the error named (``nme:`` is a misspelt ``name``, not a
    missing one)."""
    errors = error.errors()
    typos = [e for e in errors if e["type"] == "extra_forbidden" and model and _closest_field(model, e["loc"])]
    first = typos[0] if typos else errors[0]
    message = first["msg"].removeprefix("Value error, ")
    if model is not None and first["type"] == "extra_forbidden":
        message += _closest_field(model, first["loc"])
    return ".".join(str(part) for part in first["loc"]), message


def _closest_field(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """`` (did you mean `NAME`?)`` for the field of the model at ``loc``'s parent closest to its last part
    (``difflib``'s ratio of at least 0.6), else nothing."""
    fields = _fields_at(model, loc[:-1])
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


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
