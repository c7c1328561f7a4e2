"""The rich console pcctune prints to: the command line's, and the library's where its caller passes none."""

from __future__ import annotations

import logging
import sys

from rich.console import Console

WIDTH = 160
"""Columns of standard output: wide enough for a score table of the seven tasks and their average."""


def plain_console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console that prints text as written: emoji codes off (``:train:`` in ``STSBenchmark:train:`` is a split's
    name, not a train emoji) and standard output ``WIDTH`` columns wide (standard error: the terminal's)."""
    return Console(width=None if stderr else WIDTH, stderr=stderr, soft_wrap=soft_wrap, emoji=False)


def progress_by_default() -> bool:
    """Whether a library call shows its progress bar when its caller does not say (``show_progress_bar=None``): when
    standard error is a terminal, or, as sentence-transformers' ``encode`` decides, when its logger is at INFO or
    DEBUG. A log redirected to a file stays free of progress bars."""
    level = logging.getLogger("sentence_transformers").getEffectiveLevel()
    return sys.stderr.isatty() or level in (logging.INFO, logging.DEBUG)
