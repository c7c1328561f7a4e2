"""Saving matplotlib figures the same way everywhere (headless backend, tight layout, folders made)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt", "save_figure"]


def save_figure(figure, path: Path, dpi: int = 110) -> Path:
    """Lay out, write and close ``figure``; return ``path``."""
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path
