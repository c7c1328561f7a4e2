"""YAML a user wrote (a run config, a search space): read strictly, each mistake one line naming where it is.

PyYAML's ``safe_load`` keeps the last of two equal keys without a word, so a config with ``model:`` twice trains
the second; here a repeated key is an error naming both lines. A syntax error names its line and column and what
is wrong there (PyYAML's first line says only what it was parsing). An integer that YAML 1.1 reads as another
number than it shows (``seed: 0123`` is 83) is refused, and ``1e-5`` is the number it is in YAML 1.2 (YAML 1.1
reads an exponent without a decimal point as text, which a search space's choices would keep as text).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from pcctune.errors import PcctuneError


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping holding one key twice, and an integer YAML 1.1 reads otherwise than
    it is written: ``0123`` (octal, 83) or ``1:30`` (base 60, 90); ``0x``/``0b`` prefixes and ``1_000`` stay."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        digits = str(node.value).lstrip("+-").replace("_", "")
        if ":" in digits or (len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()):
            read = super().construct_yaml_int(node)
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{node.value} is read as {read} by YAML 1.1 (a leading zero is octal, a colon base 60): "
                "write the number without it, or quote it for text",
                node.start_mark,
            )
        return super().construct_yaml_int(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice (lines {seen[key]} and {line})", key_node.start_mark
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)
_StrictLoader.add_implicit_resolver(  # YAML 1.2's floats: ``1e-5`` is a number (YAML 1.1 reads it as text)
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def yaml_error_line(error: yaml.YAMLError) -> str:
    """What is wrong and where: ``line 5, column 4: expected <block end>, but found '-'``."""
    problem = getattr(error, "problem", None) or str(error).strip().splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem


def read_yaml(path: Path, what: str) -> Any:
    """The YAML document in ``path``, a ``what`` (``config file``…; ``None`` for an empty file); one clear error for
    a missing file, a folder, text that is not UTF-8, a syntax error or a repeated key."""
    if path.is_dir():
        raise PcctuneError(f"{path} is a folder; give the {what}")
    if not path.is_file():
        raise PcctuneError(f"missing {what}: {path}")
    try:
        return yaml.load(path.read_bytes().decode("utf-8"), Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except UnicodeDecodeError:
        raise PcctuneError(f"{path}: not UTF-8 text") from None
    except yaml.YAMLError as error:
        raise PcctuneError(f"{path}: invalid YAML at {yaml_error_line(error)}") from None


def read_yaml_value(text: str, what: str) -> Any:
    """One value written in YAML on the command line (``--set key=VALUE``), read as a config file's values are."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as error:
        raise PcctuneError(f"{what}: {text!r} is not a YAML value ({yaml_error_line(error)})") from None
