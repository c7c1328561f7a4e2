"""The one exception type users see: bad input, reported as a one-line message."""


class PcctuneError(Exception):
    """A user-facing error: bad input, missing data, unknown model.

    The CLI prints ``error: <message>`` and exits with code 2 instead of a traceback.
    """


class Interrupted(Exception):  # noqa: N818  (a user's Ctrl-C, not an error)
    """A run stopped by Ctrl-C. The message says what was kept and how to continue; exit code 130."""
