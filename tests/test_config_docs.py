"""The config documents itself (issue 29): every field has a description and docs/config.md is current."""

from __future__ import annotations

from pathlib import Path

from pcctune.training.config_docs import models, reference

DOC = Path(__file__).parents[1] / "docs" / "config.md"


def test_every_config_field_has_a_description():
    missing = [f"{m.__name__}.{n}" for m in models() for n, f in m.model_fields.items() if not f.description]
    assert len(models()) >= 8 and not missing, missing


def test_docs_config_md_is_generated_from_the_models():
    assert DOC.read_text(encoding="utf-8") == reference(), "docs/config.md is stale: run `make config-docs`"
