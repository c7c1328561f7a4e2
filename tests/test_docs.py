"""The documentation site builds with ``--strict`` (no warning) and its generated references cover the code: every
name of ``pcctune.__all__``, every CLI command and every config field, with its description, is in the built site."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel

import pcctune
from pcctune.cli import app
from pcctune.training.config import RunConfig

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built as ``make docs`` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    bin_dir = str(Path(sys.executable).parent)  # the CLI reference runs the venv's `typer`
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    return out


def page_text(site: Path, page: str) -> str:
    """The visible text of a built page (tags dropped, entities decoded, whitespace collapsed)."""
    raw = (site / page / "index.html").read_text(encoding="utf-8")
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def config_models(model: type[BaseModel] = RunConfig, seen: set[type[BaseModel]] | None = None) -> list[type]:
    """``RunConfig`` and every model nested in its fields."""
    seen = set() if seen is None else seen
    if model in seen:
        return []
    seen.add(model)
    found: list[type] = [model]
    for field in model.model_fields.values():
        for inner in _model_types(field.annotation):
            found += config_models(inner, seen)
    return found


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [t for arg in getattr(annotation, "__args__", ()) for t in _model_types(arg)]


def cli_commands(command: Any = None, prefix: str = "pcctune") -> list[str]:
    """Every command path of the CLI (``pcctune data download``, ...)."""
    command = command or typer.main.get_command(app)
    paths = []
    for name, sub in getattr(command, "commands", {}).items():
        paths.append(f"{prefix} {name}")
        paths += cli_commands(sub, f"{prefix} {name}")
    return paths


def test_every_config_field_has_a_description():
    models = config_models()
    missing = [f"{m.__name__}.{n}" for m in models for n, f in m.model_fields.items() if not f.description]
    assert len(models) >= 7 and not missing, missing


def test_every_public_name_is_in_the_api_reference(site):
    text = page_text(site, "reference/api")
    missing = [name for name in pcctune.__all__ if name not in text]
    assert not missing, missing


def test_every_command_is_in_the_cli_reference(site):
    text = page_text(site, "reference/cli")
    commands = cli_commands()
    assert "pcctune data download" in commands and len(commands) >= 15
    assert [c for c in commands if c not in text] == []


def test_every_config_field_and_its_description_is_in_the_config_reference(site):
    text = page_text(site, "reference/config")
    letters = "".join(text.split())  # descriptions compared without markup and whitespace
    missing = []
    for model in config_models():
        assert model.__name__ in text
        for name, field in model.model_fields.items():
            description = "".join((field.description or "").replace("`", "").split())
            if name not in text or description[:40] not in letters:
                missing.append(f"{model.__name__}.{name}")
    assert not missing, missing
