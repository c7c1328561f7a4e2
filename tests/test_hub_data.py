"""``source: hub``: stage data through ``datasets.load_dataset``, tested offline on local copies in the
Hub's file layout (the real loading code, never the network)."""

from __future__ import annotations

import json

import yaml

from tests.conftest import SENTENCES, assert_one_line_error, run_cli


def _simcse_copy(folder):
    """A folder laid out as princeton-nlp/datasets-for-simcse: nli_for_simcse.csv with sent0, sent1, hard_neg."""
    folder.mkdir()
    triplets = [f"{SENTENCES[i]} {i},{SENTENCES[i + 1]} {i},{SENTENCES[i + 2]} {i}" for i in range(8)]  # all distinct
    rows = ["sent0,sent1,hard_neg", *triplets]
    (folder / "nli_for_simcse.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def _config(tmp_path, model, senteval, stage) -> str:
    config = {
        "model": str(model),
        "data_dir": str(senteval),
        "output_dir": str(tmp_path / "run"),
        "evaluate_before": False,
        "stages": [{"name": "hub", "batch_size": 4, "max_steps": 1, "dev": "none", **stage}],
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_a_stage_trains_on_simcse_triplets_from_a_hub_layout(tiny_bert, shared_senteval, tmp_path, capsys):
    data = {
        "source": "hub",
        "name": str(_simcse_copy(tmp_path / "datasets-for-simcse")),
        "data_files": "nli_for_simcse.csv",
        "columns": {"anchor": "sent0", "positive": "sent1", "negative": "hard_neg"},
    }
    config = _config(tmp_path, tiny_bert, shared_senteval, {"loss": "infonce", "data": data})
    code, output = run_cli(["train", config], capsys)
    assert code == 0, output
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["stages"][0]["train_examples"] == 8


def test_scored_pairs_from_a_hub_layout_and_a_missing_column(tiny_bert, shared_senteval, tmp_path, capsys):
    folder = tmp_path / "pairs"
    folder.mkdir()
    rows = [{"sentence1": f"{SENTENCES[i]} {i}", "sentence2": SENTENCES[i + 3], "score": i / 2} for i in range(8)]
    (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    stage = {"loss": "pearson", "data": {"source": "hub", "name": str(folder)}}
    code, output = run_cli(["train", _config(tmp_path, tiny_bert, shared_senteval, stage)], capsys)
    assert code == 0, output
    stage["data"]["columns"] = {"score": "label"}
    (tmp_path / "run" / "results.json").unlink()
    code, output = run_cli(["train", _config(tmp_path, tiny_bert, shared_senteval, stage), "--overwrite"], capsys)
    assert_one_line_error(code, output, "has no column 'label'")


def test_a_local_hub_dataset_changed_between_two_reads_in_one_process_is_read_again(shared_senteval, tmp_path):
    from pcctune.training.config import DataConfig
    from pcctune.training.datasets import scored_pairs

    folder = tmp_path / "pairs"
    folder.mkdir()

    def write(count: int) -> None:
        rows = [
            {"sentence1": f"{SENTENCES[i]} {i}", "sentence2": SENTENCES[i + 3], "score": i / 2} for i in range(count)
        ]
        (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")

    data = DataConfig.model_validate({"source": "hub", "name": str(folder), "leakage": "none"})
    write(8)
    assert len(scored_pairs(data, shared_senteval)) == 8
    write(6)
    assert len(scored_pairs(data, shared_senteval)) == 6  # not the first read's pairs from the in-process cache
