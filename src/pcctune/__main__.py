"""``python -m pcctune``: the command line."""

from pcctune.cli import main

main()
