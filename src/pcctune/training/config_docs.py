"""``docs/config.md``, generated from the run-config models (every field's type, default and description),
so the reference is never written twice: ``make config-docs`` rewrites it and a test fails when it is stale.

    python -m pcctune.training.config_docs docs/config.md
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from pcctune.io import write_text
from pcctune.training.config import RunConfig

HEADER = """# Run config reference

Generated from the pydantic models by `make config-docs` (`pcctune.training.config_docs`); edit the
field descriptions in the code, not this page. A run config is one YAML mapping: the `RunConfig`
fields, with `stages:` a list of `StageConfig` mappings. `--set a.b.0.c=VALUE` overrides any of them
from the command line.
"""


def _type_name(annotation: object) -> str:
    text = str(annotation).replace("typing.", "").replace("pcctune.", "")
    if isinstance(annotation, type):
        text = annotation.__name__
    for module in ("training.config.", "modeling.adapters.", "modeling.quantization.", "data.leakage."):
        text = text.replace(module, "")
    return text.replace("|", "\\|")


def _default(field: typing.Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default if field.default is not PydanticUndefined else field.default_factory()
    if isinstance(value, BaseModel):
        return f"see {type(value).__name__}"
    return f"`{getattr(value, 'value', value)!r}`".replace("|", "\\|")


def _nested(model: type[BaseModel]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    for field in model.model_fields.values():
        for candidate in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel) and candidate not in found:
                found.append(candidate)
    return found


def models(root: type[BaseModel] = RunConfig) -> list[type[BaseModel]]:
    """``root`` and every model nested in it, breadth first."""
    ordered = [root]
    for model in ordered:
        ordered += [nested for nested in _nested(model) if nested not in ordered]
    return ordered


def reference() -> str:
    """The markdown reference of every config model."""
    parts = [HEADER]
    for model in models():
        doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        parts.append(
            f"## {model.__name__}\n\n{doc}\n\n| field | type | default | what it does |\n| --- | --- | --- | --- |"
        )
        for name, field in model.model_fields.items():
            description = (field.description or "").replace("|", "\\|")
            parts.append(f"| `{name}` | {_type_name(field.annotation)} | {_default(field)} | {description} |")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    write_text(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/config.md"), reference())
