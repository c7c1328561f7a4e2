"""``python -m pcctune.cli``: the command line (as ``torchrun -m pcctune.cli`` starts it)."""

from pcctune.cli import main

main()
