"""Saving matplotlib figures the same way everywhere (headless backend, tight layout, atomic write)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen before pyplot loads)
from matplotlib.figure import Figure  # noqa: E402

from pcctune.io import write_with  # noqa: E402

__all__ = ["plt", "save_figure"]


def save_figure(figure: Figure, path: Path, dpi: int = 110) -> Path:
    """Lay out, write (atomically, as PNG) and close ``figure``; return ``path``."""
    figure.tight_layout()
    try:
        return write_with(path, lambda handle: figure.savefig(handle, dpi=dpi, format="png"))
    finally:
        plt.close(figure)
