"""``docs/api.md``, generated from the docstrings and signatures of ``pcctune.__all__`` and the loss registry
(``make docs``; a test fails when it is stale), so the API reference is written once, in the code.

    python -m pcctune.orchestration.api_docs docs/api.md
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pcctune
from pcctune.io import write_text
from pcctune.losses.registry import losses_markdown

HEADER = """# Python API reference

Generated from the docstrings of `pcctune.__all__` by `make docs` (`pcctune.orchestration.api_docs`);
edit the docstrings, not this page. Every name loads on first use (`import pcctune` stays light).
"""


def _signature(value: object) -> str:
    target = value.__init__ if inspect.isclass(value) else value
    try:
        signature = inspect.signature(target)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    parameters = [p for name, p in signature.parameters.items() if name != "self"]
    return "(" + ", ".join(str(p) for p in parameters) + ")"


def entry(name: str) -> str:
    """One name's section: category, module, signature and docstring."""
    value = getattr(pcctune, name)
    category = "class" if inspect.isclass(value) else "function" if callable(value) else "value"
    module = getattr(value, "__module__", "pcctune")
    doc = inspect.cleandoc(value.__doc__ or "") if category != "value" else f"`{value!r}`"
    signature = f"\n\n```python\npcctune.{name}{_signature(value)}\n```" if category != "value" else ""
    return f"## `{name}` ({category}, `{module}`){signature}\n\n{doc}\n"


def reference() -> str:
    """The markdown page of every public name, in ``__all__``'s order, then the loss registry's names."""
    names = [name for name in pcctune.__all__ if name != "PcctuneError"] + ["PcctuneError"]
    losses = "## The losses a stage names (`loss:` in a config)\n\n" + losses_markdown() + "\n"
    return HEADER + "\n" + "\n".join(entry(name) for name in names) + "\n" + losses


if __name__ == "__main__":
    write_text(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/api.md"), reference())
