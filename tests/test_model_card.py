"""Every saved model's card carries the run's STS table, the leakage report, the config's changed fields and how to
load it; it names its base model, loads the model by its folder or the Hub id it is pushed to (never a placeholder),
shows one score scale, links to no repository address and holds no absolute local path."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml
from huggingface_hub.repocard import metadata_load
from markdown_it import MarkdownIt

from pcctune.modeling.build import build_model
from pcctune.orchestration.model_card import (
    FULL_CONFIG,
    base_model_id,
    changed_fields,
    name_base_model,
    pcctune_section,
    portable,
)
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.results import RunResult
from pcctune.training.config import RunConfig
from tests.conftest import one_step_stage2, pairs_jsonl, stage_record, tiny_run

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
    links = re.findall(r"\]\(([^)\s]+)\)", section)
    assert links and "pypi.org" not in section and "github.com" not in section
    for link in links:  # the Hub's pages, or the full config beside the model
        assert (
            link.startswith("https://huggingface.co/") or (tmp_path / "run" / "stage1-pcc" / "final" / link).is_file()
        )


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


def test_the_card_of_a_tiny_run_loads_its_folder_shows_one_scale_and_only_changed_fields(
    tiny_bert, shared_senteval, tmp_path
):
    config = RunConfig.model_validate(
        tiny_run(tiny_bert, shared_senteval, pairs_jsonl(tmp_path / "pairs.jsonl"), tmp_path / "run", max_steps=2)
    )  # two steps, the dev set scored after the second
    record = run_pipeline(config)
    folder = tmp_path / "run" / "stage1-pcc" / "final"
    card = (folder / "README.md").read_text()
    # sentence-transformers' usage snippet and pcctune's load this folder, not a placeholder "from the Hub"
    assert "sentence_transformers_model_id" not in card and "Download from the" not in card
    assert card.count('model = SentenceTransformer("run/stage1-pcc/final")') == 2
    # one scale: the dev score of the best step, in sentence-transformers' training logs too, is × 100
    best = record.stages[0].best_dev_spearman
    assert best is not None and f" {round(best * 100, 4)} " in card and f"| {best * 100:.2f} |" in card
    assert f" {round(best, 4)} " not in card
    # the config's changed fields, and the whole config beside the model
    shown = yaml.safe_load(card.split("### Run config")[1].split("```yaml\n")[1].split("```")[0])
    assert shown == portable(changed_fields(config)) and shown["evaluate_before"] is False
    assert not {"adapter", "dtype", "eval_protocol"} & set(shown) and not {"dpo", "mlm", "regression"} & set(
        shown["stages"][0]
    )
    full = yaml.safe_load((folder / FULL_CONFIG).read_text())
    assert full["stages"][0]["dpo"] == record.config["stages"][0]["dpo"] and f"]({FULL_CONFIG})" in card
    # each widget sentence once
    widget = metadata_load(folder / "README.md").get("widget") or []
    sentences = [s for example in widget for s in [example.get("source_sentence"), *example.get("sentences", [])] if s]
    assert len(sentences) == len(set(sentences))


def test_the_card_says_how_many_pairs_of_each_audited_source_are_test_pairs(tmp_path):
    """A record's ``leakage_audit`` gives one line per source, as the log says it: its test pairs at every level, the
    test sets they are in, and whether the filter removed them; a count above 0 at a level the run does not filter at
    is shown too."""
    from pcctune.results import SourceLeakage
    from pcctune.training.audit import leakage_summary

    (tmp_path / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer"}]))
    stage = {"name": "pcc", "loss": "pearson", "data": {"source": "pairs", "path": "my.csv"}}
    config = RunConfig.model_validate({"model": "all-MiniLM-L6-v2", "stages": [stage]})

    def at(*counts: int) -> dict[str, int]:
        return dict(zip(("pair", "normalized", "near", "sentence"), counts, strict=True))

    audit = [
        SourceLeakage(source="my.csv", stage="pcc", role="train", level="pair", filter="none", pairs=200,
                      test_pairs=200, removed=0, by_task={"STS12": 200, "STS13": 0}, by_level=at(200, 200, 200, 200)),
        SourceLeakage(source="dev.csv", stage="pcc", role="dev", level="normalized", filter="normalized", pairs=100,
                      test_pairs=8, removed=8, by_task={"STS14": 8}, by_level=at(1, 8, 9, 20)),
        SourceLeakage(source="sick-trial", stage="pcc", role="dev", level="pair", filter="pair", pairs=500,
                      test_pairs=0, removed=0, by_task={}, by_level=at(0, 7, 90, 480)),
    ]  # fmt: skip
    record = RunResult(protocol="simcse-senteval", data_dir="data", seed=1, config=config.model_dump(mode="json"))
    section = pcctune_section(config, record.model_copy(update={"leakage_audit": audit}), "pcc", None, tmp_path)
    assert (
        "- `my.csv`, which stage `pcc` trained on: 200 of 200 pairs are test pairs at pair (STS12 200); 200 at "
        "normalized, 200 at near, 200 at sentence; kept (leakage: none)." in section
    )
    assert (
        "- `dev.csv`, which stage `pcc` selects checkpoints on: 8 of 100 pairs are test pairs at normalized (STS14 8); "
        "1 at pair, 9 at near, 20 at sentence; 8 removed." in section
    )
    assert (
        "- `sick-trial`, which stage `pcc` selects checkpoints on: 0 of 500 pairs are test pairs at pair; 7 at "
        "normalized, 90 at near, 480 at sentence." in section
    )
    assert all(leakage_summary(entry) in section for entry in audit)  # the log's words
    assert "checked against the test sets" not in pcctune_section(config, record, "pcc", None, tmp_path)


def test_the_card_says_when_a_stage_was_best_at_its_last_dev_evaluation(tmp_path):
    (tmp_path / "modules.json").write_text('[{"type": "sentence_transformers.models.Transformer"}]')
    config = RunConfig.model_validate(
        {"model": "all-MiniLM-L6-v2", "stages": [{"name": "pcc", "loss": "pearson", "data": {"source": "stage2"}}]}
    )

    def section(at_last: bool, skipped: int | None = None) -> str:
        stage = stage_record(at_last, best_dev_spearman=0.82, dev_pairs={"sick-trial": 491}, skipped_steps=skipped)
        record = RunResult(
            protocol="simcse-senteval",
            data_dir="data",
            seed=1,
            config=config.model_dump(mode="json"),
            sts_by_stage={"pcc": {"STS12": 71.0, "avg": 71.0}},
            stages=[stage],
        )
        return pcctune_section(config, record, "pcc", None, tmp_path)

    said = "the best was its last dev evaluation, so a longer schedule may score higher"
    assert said in section(True) and said not in section(False)
    skipped = "3 steps skipped for a non-finite loss or gradient"
    assert skipped in section(False, 3) and "skipped" not in section(False, 0) + section(False)
