"""Every saved model's card carries the run's STS table, the leakage report and how to load it; it names its base
model, links only to pages that exist and holds no absolute local path."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from huggingface_hub.repocard import metadata_load
from markdown_it import MarkdownIt

from pcctune.modeling.build import build_model
from pcctune.orchestration.model_card import REPOSITORY, base_model_id, name_base_model
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.config import RunConfig
from tests.conftest import one_step_stage2

ROOT = Path(__file__).parents[1]


def test_model_card_shows_scores_leakage_config_and_loading(tiny_bert, shared_senteval, tmp_path):
    config = RunConfig.model_validate(
        {
            "model": str(tiny_bert),
            "data_dir": str(shared_senteval),
            "output_dir": str(tmp_path / "run"),
            "stages": [one_step_stage2()],
        }
    )
    record = run_pipeline(config)
    card = (tmp_path / "run" / "stage1-pcc" / "final" / "README.md").read_text()
    section = card.split("<!-- pcctune -->")[1]
    assert card.count("<!-- pcctune -->") == 1 and card.index("<!-- pcctune -->") > 0  # after ST's own card
    assert "protocol `simcse-senteval`" in section
    assert f"| pcc | {record.sts_by_stage['pcc']['STS12']:.2f}" in section and "STS-B" in section
    assert "leakage filter at level `pair`" in section and "removed at `sentence`" in section
    assert "| STSBenchmark:train | 3 | 2 | 1 | 1 |" in section  # pairs, kept, then removed at pair and normalized
    assert "loss: pearson" in section and "sentence-transformers" in section
    assert 'SentenceTransformer("' in section and "trust_remote_code" not in section  # saved as plain ST
    assert "pcctune is not needed" in section
    tokens = MarkdownIt("commonmark").enable("table").parse(card)
    assert sum(t.type == "table_open" for t in tokens) >= 3  # scores, stages, leakage
    # written again (a resumed or repeated save), the section is replaced, not duplicated
    from pcctune.orchestration.model_card import add_pcctune_section

    add_pcctune_section(tmp_path / "run" / "stage1-pcc" / "final", "<!-- pcctune -->\n## pcctune\nagain\n")
    again = (tmp_path / "run" / "stage1-pcc" / "final" / "README.md").read_text()
    assert again.count("<!-- pcctune -->") == 1 and again.endswith("again\n")


def test_the_card_names_its_base_and_holds_no_dead_link_or_local_path(tiny_bert, shared_senteval, tmp_path):
    base = tmp_path / "models" / "my-base"  # a local base whose own card names its Hub model, as a saved run's does
    shutil.copytree(tiny_bert, base)
    (base / "README.md").write_text("---\nbase_model: sentence-transformers/all-MiniLM-L6-v2\n---\n# my base\n")
    config = RunConfig.model_validate(
        {
            "model": str(base),
            "data_dir": str(shared_senteval),
            "output_dir": str(tmp_path / "run"),
            "stages": [one_step_stage2()],
        }
    )
    run_pipeline(config)
    card = (tmp_path / "run" / "stage1-pcc" / "final" / "README.md").read_text()
    assert metadata_load(tmp_path / "run" / "stage1-pcc" / "final" / "README.md")["base_model"] == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )
    assert "**Base model:** [sentence-transformers/all-MiniLM-L6-v2]" in card and "[Unknown]" not in card
    section = card.split("<!-- pcctune -->")[1]
    assert "Base model: [sentence-transformers/all-MiniLM-L6-v2](https://huggingface.co/" in section
    for local in (tmp_path, shared_senteval, tiny_bert, Path.home()):
        assert str(local) not in card, local
    assert "model: …/my-base" in section and 'SentenceTransformer("run/stage1-pcc/final")' in section
    links = re.findall(r"\]\((https?://[^)\s]+)\)", section)
    assert links and "pypi.org" not in section
    for link in links:
        if link.startswith(REPOSITORY + "/blob/main/"):
            assert (ROOT / link.removeprefix(REPOSITORY + "/blob/main/")).exists(), link
        else:
            assert link.startswith((REPOSITORY, "https://huggingface.co/")), link


def test_a_packaged_or_hub_base_is_named_by_its_hub_id_in_the_card_sentence_transformers_writes(tiny_bert, tmp_path):
    assert base_model_id("all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert base_model_id("minilm") == "sentence-transformers/all-MiniLM-L6-v2"
    assert base_model_id("BAAI/bge-small-en-v1.5") == "BAAI/bge-small-en-v1.5"
    assert base_model_id(str(tiny_bert)) is None and base_model_id(str(tmp_path / "model.gguf")) is None
    model = build_model(str(tiny_bert))
    name_base_model(model, "all-MiniLM-L6-v2")
    model.save(str(tmp_path / "saved"))
    card = (tmp_path / "saved" / "README.md").read_text()
    assert "base_model: sentence-transformers/all-MiniLM-L6-v2" in card and "[Unknown]" not in card


def test_a_model_that_needs_pcctune_says_so_in_its_card(tmp_path):
    from pcctune.orchestration.model_card import _loading

    modules = [{"idx": 0, "name": "0", "path": "", "type": "pcctune.modeling.prefix.PromptedTransformer"}]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    text = "\n".join(_loading(tmp_path))
    assert "needs pcctune installed" in text and "pip install pcctune" in text and "PromptedTransformer" in text
