"""Drawing and saving figures the same way everywhere, without touching the host's matplotlib.

A figure is made as matplotlib's own guide does for a web server ("Embedding in a web application server"):
``matplotlib.figure.Figure`` directly, never pyplot. No backend is chosen and no figure is registered with pyplot,
so a notebook's inline backend, a GUI session's open windows or a script's ``matplotlib.use`` stay as they were,
and nothing is left open to close.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from pcctune.io import write_with

__all__ = ["save_figure", "subplots"]


def subplots(nrows: int = 1, ncols: int = 1, figsize: tuple[float, float] | None = None, **kwargs: Any) -> Any:
    """``(figure, axes)`` as ``pyplot.subplots`` returns them, on a figure of its own outside pyplot
    (``kwargs``: ``Figure.subplots``'s, e.g. ``squeeze``)."""
    figure = Figure(figsize=figsize)
    return figure, figure.subplots(nrows, ncols, **kwargs)


def save_figure(figure: Figure, path: Path, dpi: int = 110) -> Path:
    """Lay out and write ``figure`` (atomically, as PNG); return ``path``."""
    figure.tight_layout()
    return write_with(path, lambda handle: figure.savefig(handle, dpi=dpi, format="png"))
