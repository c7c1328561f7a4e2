"""The one exception type users see: bad input, reported as a one-line message."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class PcctuneError(Exception):
    """A user-facing error: bad input, missing data, unknown model.

    The CLI prints ``error: <message>`` and exits with code 2 instead of a traceback.
    """


class Interrupted(Exception):  # noqa: N818  (a user's Ctrl-C, not an error)
    """A run stopped by Ctrl-C. The message says what was kept and how to continue; exit code 130."""


def first_refusal(error: ValidationError) -> tuple[str, str]:
    """The parts of a one-line message for a pydantic ``ValidationError``: where its first error lies (the dotted
    location, empty at the top level) and what it says, without pydantic's ``Value error, `` prefix."""
    first = error.errors()[0]
    return ".".join(str(part) for part in first["loc"]), first["msg"].removeprefix("Value error, ")
