"""The command line as a process: exit codes, signals, ``--debug`` and the speed settings of the command line.

Exit codes (docs/reliability.md): 0 success; 2 bad input or usage, one ``error:`` line saying what is wrong and how
to fix it; 1 an unexpected internal error, one line pointing to ``--debug`` / ``PCCTUNE_DEBUG=1`` for the traceback;
130 interrupted (143 for SIGTERM), one line saying what was kept and how to continue.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.markup import escape

from pcctune.cli.app import app
from pcctune.console import plain_console
from pcctune.errors import Interrupted, PcctuneError
from pcctune.host_settings import command_line, using
from pcctune.known_noise import known_noise_dropped

DEBUG_ENV = "PCCTUNE_DEBUG"


def _fail(code: int, message: str) -> None:
    plain_console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(message)}", highlight=False)
    sys.exit(code)


def _usage_message(error: typer.TyperException) -> str:
    """The message of a usage error, with the command whose --help explains it (when the error has one)."""
    message = error.format_message()
    context = getattr(error, "ctx", None)
    if context is not None:
        message += f" (see '{context.command_path} --help')"
    return message


SIGNAL_EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
_received: list[int] = []


def _on_signal(signum: int, frame: Any) -> None:
    """Remember the signal, then interrupt like Ctrl-C: every command turns that into what it kept."""
    _received.append(signum)
    raise KeyboardInterrupt


def _install_signal_handlers() -> dict[int, Any]:
    """SIGINT and SIGTERM interrupt the command (a SIGINT that the parent ignores, as ``nohup`` does,
    stays ignored); the previous handlers are returned to be put back."""
    previous: dict[int, Any] = {int(signum): signal.getsignal(signum) for signum in SIGNAL_EXIT_CODES}
    _received.clear()
    for signum, handler in previous.items():
        if not (signum == signal.SIGINT and handler is signal.SIG_IGN):
            signal.signal(signum, _on_signal)
    return previous


def _interrupt_code() -> int:
    """130 for SIGINT, 143 for SIGTERM: the code of the first signal received."""
    return SIGNAL_EXIT_CODES.get(signal.Signals(_received[0]), 130) if _received else 130


def main() -> None:
    """Entry point: run the app and turn every outcome into the documented exit codes."""
    previous = _install_signal_handlers()
    try:
        _run(sys.argv[1:])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _app(args: list[str]) -> int | None:
    """The app's own outcome, run with the command line's CPU speed settings (those measured fastest on the CPU's
    kind, or those ``PCCTUNE_CPU_SPEEDUPS`` names; docs/speed-settings.md); the progress bars an exception left open
    are closed first, so that the message about it starts its own line instead of trailing a half-drawn bar."""
    try:
        with using(command_line()):
            return app(args=args, prog_name="pcctune", standalone_mode=False)
    finally:
        from tqdm import tqdm

        for bar in list(tqdm._instances):  # tqdm's registry of open bars
            bar.close()


@contextmanager
def _log_shown(debug: bool) -> Iterator[None]:
    """With ``--debug``, pcctune's own log from INFO up on stderr for the command (e.g. which CPU speed settings are
    on and why); the logger as it was afterwards."""
    logger = logging.getLogger("pcctune")
    if not debug:
        yield
        return
    handler, level = logging.StreamHandler(sys.stderr), logger.level
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run(argv: list[str]) -> None:
    debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    with known_noise_dropped(), _log_shown(debug):
        _run_command([arg for arg in argv if arg != "--debug"], debug)


def _run_command(args: list[str], debug: bool) -> None:
    """Run the command; every outcome becomes its exit code and at most one line on stderr."""
    try:
        code = _app(args)
    except PcctuneError as error:
        _fail(2, str(error))
    except typer.TyperException as error:  # click's usage errors, from typer's own copy of click
        if type(error).__name__ == "NoArgsIsHelpError":  # a group called bare; typer tells it by name alike
            print(error.format_message(), file=sys.stderr)  # its help, as click prints it, not an error line
            sys.exit(2)
        _fail(2, _usage_message(error))
    except Interrupted as stop:
        plain_console(stderr=True, soft_wrap=True).print(escape(str(stop)), highlight=False)
        sys.exit(_interrupt_code())
    except (KeyboardInterrupt, typer.Abort):
        plain_console(stderr=True).print("interrupted")
        sys.exit(_interrupt_code())
    except Exception as error:
        if debug:
            traceback.print_exc()
        detail = str(error).splitlines()[0] if str(error) else ""
        _fail(
            1,
            f"internal error ({type(error).__name__}: {detail}); rerun with --debug or {DEBUG_ENV}=1 "
            "for the traceback, and please report it",
        )
    if code == 130 or _received:  # typer returns 130 for a Ctrl-C outside our handlers; a swallowed signal
        plain_console(stderr=True).print("interrupted; what had finished before the signal is kept")
        sys.exit(_interrupt_code())
    sys.exit(code or 0)
