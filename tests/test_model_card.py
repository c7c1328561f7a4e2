"""Every saved model's card carries the run's STS table, the leakage report and how to load it."""

from __future__ import annotations

import json

from markdown_it import MarkdownIt

from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.config import RunConfig
from tests.conftest import one_step_stage2


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


def test_a_model_that_needs_pcctune_says_so_in_its_card(tmp_path):
    from pcctune.orchestration.model_card import _loading

    modules = [{"idx": 0, "name": "0", "path": "", "type": "pcctune.modeling.prefix.PromptedTransformer"}]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    text = "\n".join(_loading(tmp_path))
    assert "needs pcctune installed" in text and "pip install pcctune" in text and "PromptedTransformer" in text
