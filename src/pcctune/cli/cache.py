"""``pcctune cache``: list and remove what pcctune keeps in its cache."""

from __future__ import annotations

from typing import Annotated

import typer

from pcctune.cli.app import cache_app, console
from pcctune.errors import PcctuneError


@cache_app.command("list")
def cache_list_command(
    kind: Annotated[str | None, typer.Option(help="only this kind (gguf, packaged, resume, ...)")] = None,
) -> None:
    """Show every cache entry: kind, name, size, age and what made it."""
    from pcctune.orchestration.cache import entries_table, list_entries
    from pcctune.paths import cache_root

    entries = list_entries(kind)
    console.print(entries_table(entries) if entries else f"the cache at {cache_root()} is empty")


@cache_app.command("clear")
def cache_clear_command(
    kind: Annotated[str | None, typer.Option(help="remove only this kind (gguf, packaged, resume, ...)")] = None,
    all_: Annotated[bool, typer.Option("--all", help="remove every entry")] = False,
) -> None:
    """Remove cache entries, of one kind or all; entries another command is using are left alone."""
    from pcctune.orchestration.cache import clear_entries, human_size

    if (kind is None) == (not all_):
        raise PcctuneError("say what to remove: --kind KIND or --all (see: pcctune cache list)")
    removed, busy = clear_entries(kind)
    console.print(f"removed {len(removed)} entries ({human_size(sum(e.size for e in removed))})")
    for entry in busy:
        console.print(f"kept {entry.path}: in use by another pcctune command")
