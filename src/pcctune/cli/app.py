"""The ``pcctune`` app, its command groups and what several of their commands share: the console, ``--data``, a
choice checked in one line, the backend choice and the message an interrupted command leaves."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from pcctune.console import plain_console
from pcctune.errors import Interrupted, PcctuneError, unknown

console = plain_console()
"""Where the commands print (stdout, plain: no colour codes in a pipe)."""

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: no type column ("--help <bool>")
    help="Train, evaluate and compare sentence embeddings for STS (Pcc-tuning and its baselines).",
)
data_app = typer.Typer(no_args_is_help=True, help="Prepare and inspect data (stage-2 set, leakage reports).")
app.add_typer(data_app, name="data")
cache_app = typer.Typer(no_args_is_help=True, help="List and remove what pcctune keeps in its cache ($PCCTUNE_CACHE).")
app.add_typer(cache_app, name="cache")


def _show_version(value: bool) -> None:
    if value:
        from pcctune import __version__

        console.print(f"pcctune {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Train, evaluate and compare sentence embeddings for STS (Pcc-tuning and its baselines)."""


DataOption = Annotated[
    Path | None,
    typer.Option(
        "--data", help="SentEval folder (or a root holding senteval/); default $PCCTUNE_DATA, else the cached copy"
    ),
]


def check_choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
    """One line naming the choices where ``value`` is not among them."""
    if value not in allowed:
        raise PcctuneError(unknown(what, value, allowed))


def backend_choice(value: str) -> Any:
    """``--backend`` checked among the backends ``pcctune eval`` and ``export`` know."""
    from pcctune.orchestration.evaluate import BACKENDS

    check_choice("backend", value, BACKENDS)
    return value


@contextmanager
def interrupt_says(message: str) -> Iterator[None]:
    """A Ctrl-C inside becomes ``Interrupted(message)``: one line saying what is kept and how to continue."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(message) from None
