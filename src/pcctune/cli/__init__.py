"""The ``pcctune`` command line: a thin door onto the orchestration layer.

Each module registers its commands on the app (``pcctune.cli.app``), in the order ``pcctune --help`` lists them:
``training`` (train, sweep), ``evaluation`` (eval, encode, compare, report, mteb, bound, icl), ``sharing`` (export,
push), then the groups ``data`` and ``cache``. ``pcctune.cli.process`` runs the app as a process (exit codes,
signals, ``--debug``). Heavy libraries are imported inside the commands, so ``--help`` is fast.
"""

from pcctune.cli import training  # isort: skip
from pcctune.cli import evaluation  # isort: skip
from pcctune.cli import sharing  # isort: skip
from pcctune.cli import cache, data
from pcctune.cli.app import app
from pcctune.cli.process import main

__all__ = ["app", "cache", "data", "evaluation", "main", "sharing", "training"]
