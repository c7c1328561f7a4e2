"""Write the loss registry's tables into the loss guide: ``python docs/gen_losses.py [PAGE]`` (default
``docs/losses.md``).

Each table lies between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->`` on the page and is replaced by
what ``pcctune.losses.registry`` makes of the registry now (``losses``: every loss; ``renamed``: the earlier names),
so the registry is the one copy and the page is rewritten from it (``make docs`` runs this first).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from pcctune.known_noise import known_noise_dropped

with known_noise_dropped():  # pcctune.losses imports bitsandbytes (through peft): its notice says nothing here
    from pcctune.losses.registry import losses_markdown, renamed_markdown

PAGE = Path(__file__).resolve().parent / "losses.md"
TABLES: dict[str, Callable[[], str]] = {"losses": losses_markdown, "renamed": renamed_markdown}


def generated(text: str) -> str:
    """``text`` with every marked table made anew from the registry."""
    for name, table in TABLES.items():
        block = re.compile(rf"<!-- generated: {name} -->\n(?:.*?\n)?<!-- end: {name} -->", re.DOTALL)
        found = block.search(text)
        if found is None:
            raise SystemExit(f"no <!-- generated: {name} --> … <!-- end: {name} --> block on the page")
        made = f"<!-- generated: {name} -->\n{table()}\n<!-- end: {name} -->"
        text = text[: found.start()] + made + text[found.end() :]
    return text


def main(page: Path = PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    page.write_text(generated(text), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else PAGE)
