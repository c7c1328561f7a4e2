"""Selection that leaks nothing: every dev set a stage selects on is filtered at the stage's leakage level with the
training data's filter, a built-in set that keeps too few pairs is replaced by a held-out share of the training
pairs, and that share is never trained on."""

from __future__ import annotations

import json

import pytest

from pcctune.data.dev import HOLDOUT, dev_parts, in_holdout
from pcctune.data.leakage import LEVELS, LeakageLevel
from pcctune.data.stage2 import save_pairs_jsonl
from pcctune.errors import PcctuneError
from pcctune.training.config import StageConfig
from pcctune.training.datasets import scored_pairs, train_dataset
from pcctune.training.dev import dev_metric, holds_out, stage_dev_parts
from tests.conftest import pairs_jsonl, run_cli


def _stage(pairs, level: str, dev) -> StageConfig:
    data = {"source": "pairs", "path": str(pairs), "leakage": level}
    return StageConfig.model_validate({"name": "pcc", "loss": "pearson", "data": data, "batch_size": 2, "dev": dev})


@pytest.fixture()
def training_file(tmp_path, shared_senteval):
    """200 scored training pairs of the test sentences, each numbered: no sentence is a test sentence."""
    return pairs_jsonl(tmp_path / "train.jsonl", count=200, distinct=True)


@pytest.mark.parametrize("level", [level.value for level in LEVELS])
def test_no_dev_set_used_for_selection_holds_anything_its_level_removes(
    level, training_file, shared_senteval, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("PCCTUNE_DATA", str(shared_senteval))
    mine = pairs_jsonl(tmp_path / "my_dev.jsonl", count=24)  # the test sentences themselves: only `pair` keeps some
    stage = _stage(training_file, level, ["sick-trial+stsb-dev", *([str(mine)] if level == "pair" else [])])
    parts = stage_dev_parts(stage, shared_senteval)
    if level != "pair":  # the miniature dev sets keep fewer than 200 pairs above `pair`: the held-out share instead
        assert list(parts) == [HOLDOUT]
    used = save_pairs_jsonl([pair for pairs in parts.values() for pair in pairs], tmp_path / "used.jsonl")
    code, output = run_cli(
        ["data", "audit", "--data", str(shared_senteval), "--pairs", str(used), "--output", str(tmp_path / "a.json")],
        capsys,
    )
    assert code == 0, output
    (audit,) = [s for s in json.loads((tmp_path / "a.json").read_text())["sources"] if s["role"] == "train"]
    assert audit["total"] == sum(len(pairs) for pairs in parts.values()) > 0
    assert audit["removed"][level] == 0


def test_a_test_pair_in_the_users_dev_file_is_removed_at_every_level(shared_senteval, tmp_path):
    mine = pairs_jsonl(tmp_path / "my_dev.jsonl", count=24)
    kept = len(dev_parts([str(mine)], shared_senteval, LeakageLevel.pair)["my_dev"])
    assert 0 < kept < 24  # the miniature test sets hold some of these pairs exactly
    with pytest.raises(PcctuneError, match="'my_dev' keeps 0 pairs"):
        dev_parts([str(mine)], shared_senteval, LeakageLevel.sentence)  # every sentence is a test sentence
    # a stage whose training keeps its test pairs (leakage: none) still chooses its checkpoints on pairs filtered
    assert len(dev_parts([str(mine)], shared_senteval, None)["my_dev"]) == kept


def test_a_runs_own_test_file_is_no_stages_dev_set_and_every_filtering_stage_filters_against_it(tmp_path):
    from pcctune.training.config import RunConfig

    stage = {"name": "pcc", "loss": "pearson", "data": {"source": "pairs", "path": "train.csv"}}
    config = RunConfig.model_validate({"model": "m", "tasks": ["STS12", "mine.csv"], "stages": [stage]})
    assert config.stages[0].data.leakage_against == ["mine.csv"]  # filtered against it, and the saved config says so
    stage["data"]["leakage_against"] = ["mine.csv"]
    listed = RunConfig.model_validate({"model": "m", "tasks": ["STS12", "mine.csv"], "stages": [stage]})
    assert listed.stages[0].data.leakage_against == ["mine.csv"] and listed == config  # not added twice
    with pytest.raises(ValueError, match="dev 'mine.csv' is one of the run's test sets"):
        RunConfig.model_validate({"model": "m", "tasks": ["mine.csv"], "stages": [stage | {"dev": "mine.csv"}]})
    kept_whole = {"name": "raw", "loss": "pearson", "data": {"source": "pairs", "path": "t.csv", "leakage": "none"}}
    triplets = {"name": "nli", "loss": "infonce", "data": {"source": "simcse_csv", "path": "nli.csv"}}
    raw = RunConfig.model_validate({"model": "m", "tasks": ["mine.csv"], "stages": [kept_whole, triplets]})
    # stages that keep their training data whole still choose checkpoints on dev parts filtered against it
    assert [stage.data.leakage_against for stage in raw.stages] == [["mine.csv"], ["mine.csv"]]
    assert RunConfig.model_validate(raw.model_dump(mode="json")) == raw  # the saved config loads again


def test_the_held_out_share_is_about_15_percent_the_same_for_every_loss_and_never_trained_on(
    training_file, shared_senteval
):
    pearson = _stage(training_file, "sentence", "holdout")
    cosine = pearson.model_copy(update={"loss": "cosine_mse"})
    assert holds_out(pearson, shared_senteval)
    held = stage_dev_parts(pearson, shared_senteval)[HOLDOUT]
    assert held == stage_dev_parts(cosine, shared_senteval)[HOLDOUT]
    clean = scored_pairs(pearson.data, shared_senteval)  # what the sentence filter keeps of the 200
    assert 0 < len(clean) < 200
    assert 0.08 < len(held) / len(clean) < 0.25
    trained = train_dataset(pearson, shared_senteval, holdout=True)
    assert len(trained) == len(clean) - len(held)
    assert not any(in_holdout(p) for p in map(_pair, trained["sentence1"], trained["sentence2"]))
    assert dev_metric("holdout") == "eval_holdout_spearman_cosine"


def test_a_twin_of_a_held_out_pair_that_hashes_apart_is_not_trained_on(training_file, shared_senteval, tmp_path):
    """A pair that is a held-out pair once case and spacing are folded hashes apart from it: trained on, it would
    put the pairs that select checkpoints into training. It is left out with its twin."""
    import json

    from pcctune.data.leakage import normalize_sentence

    rows = [json.loads(line) for line in training_file.read_text().splitlines()]
    twins = []
    for row in rows:
        twin = {**row, "sentence1": row["sentence1"].upper(), "sentence2": "  " + row["sentence2"]}
        if in_holdout(_pair(row["sentence1"], row["sentence2"])) and not in_holdout(
            _pair(twin["sentence1"], twin["sentence2"])
        ):
            twins.append(twin)
    assert twins
    with_twins = tmp_path / "with_twins.jsonl"
    with_twins.write_text("".join(json.dumps(row) + "\n" for row in [*rows, *twins]))
    stage = _stage(with_twins, "sentence", "holdout")
    held = stage_dev_parts(stage, shared_senteval)[HOLDOUT]
    folded = {tuple(sorted(map(normalize_sentence, (p.sentence1, p.sentence2)))) for p in held}
    dataset = train_dataset(stage, shared_senteval, holdout=True)
    trained = list(map(_pair, dataset["sentence1"], dataset["sentence2"]))
    assert trained and not any(
        tuple(sorted(map(normalize_sentence, (p.sentence1, p.sentence2)))) in folded for p in trained
    )
    clean = scored_pairs(stage.data, shared_senteval)  # what the sentence filter keeps, twins among them
    kept_twins = {(p.sentence1, p.sentence2) for p in clean} & {(t["sentence1"], t["sentence2"]) for t in twins}
    assert kept_twins and len(trained) == len(clean) - len(held) - len(kept_twins)


def test_above_pair_a_built_in_dev_set_that_keeps_too_few_pairs_is_replaced_by_the_held_out_share_and_said(
    training_file, shared_senteval, caplog
):
    at_sentence, at_pair = (_stage(training_file, level, "sick-trial") for level in ("sentence", "pair"))
    with caplog.at_level("WARNING", logger="pcctune.data.dev"):
        parts = stage_dev_parts(at_sentence, shared_senteval)
    assert list(parts) == [HOLDOUT] and parts[HOLDOUT]
    assert "dev set 'sick-trial' keeps" in caplog.text and "held-out 15 % of the training pairs" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="pcctune.data.dev"):
        assert list(stage_dev_parts(at_pair, shared_senteval)) == ["sick-trial"]  # at pair a small set is kept
    assert not caplog.text


def _pair(sentence1: str, sentence2: str):
    from pcctune.data.sts import STSPair

    return STSPair(sentence1, sentence2, 0.0)


def test_a_held_out_share_needs_scored_training_pairs(shared_senteval):
    stage = StageConfig.model_validate({"name": "s1", "loss": "infonce", "data": {"source": "snli"}, "dev": "holdout"})
    with pytest.raises(PcctuneError, match="has no scores"):
        stage_dev_parts(stage, shared_senteval)


def test_a_leakage_level_given_for_triplets_is_an_error_but_a_saved_config_loads_again():
    with pytest.raises(ValueError, match="data.leakage filters scored pairs"):
        StageConfig.model_validate({"name": "s1", "loss": "infonce", "data": {"source": "snli", "leakage": "sentence"}})
    stage = StageConfig.model_validate({"name": "s1", "loss": "infonce", "data": {"source": "snli"}})
    assert StageConfig.model_validate(stage.model_dump(mode="json")) == stage  # it writes the default level, pair
    hub = {"source": "hub", "name": "sentence-transformers/all-nli", "subset": "triplet"}
    with pytest.raises(ValueError, match="'infonce' trains on triplets"):  # a Hub triplet set: never filtered either
        StageConfig.model_validate({"name": "s1", "loss": "infonce", "data": hub | {"leakage": "sentence"}})
    stage = StageConfig.model_validate({"name": "s1", "loss": "infonce", "data": hub})
    assert StageConfig.model_validate(stage.model_dump(mode="json")) == stage


def test_an_unknown_dev_entry_is_a_config_error():
    with pytest.raises(ValueError, match="unknown dev set 'sick'"):
        StageConfig.model_validate({"name": "s", "loss": "pearson", "data": {"source": "stage2"}, "dev": ["sick"]})


def test_a_run_record_names_its_test_training_and_dev_files_relative_to_the_data_folder(
    tiny_bert, shared_senteval, tmp_path
):
    import pcctune
    from tests.conftest import one_step_stage2

    config = {"model": str(tiny_bert), "data_dir": str(shared_senteval), "output_dir": str(tmp_path / "run")}
    config |= {"evaluate_before": False, "stages": [one_step_stage2(dev="sick-trial")]}
    result = pcctune.train(pcctune.RunConfig.model_validate(config))
    names = set(result.data_files_sha256)
    assert "downstream/STS/STSBenchmark/sts-train.csv" in names  # training
    assert any(name.startswith("downstream/SICK/") and "trial" in name for name in names)  # dev
    assert any(name.startswith("downstream/STS/STS12") for name in names)  # test
    assert not any(name.startswith("/") for name in names)


def test_a_run_selects_on_your_dev_file_filtered_against_your_test_file_and_its_card_says_so(
    tiny_bert, shared_senteval, tmp_path
):
    import csv

    import pcctune

    def write_csv(path, rows):
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["sentence1", "sentence2", "score"])
            writer.writerows(rows)
        return path

    train = [json.loads(line) for line in pairs_jsonl(tmp_path / "t.jsonl", 40, distinct=True).read_text().splitlines()]
    rows = [(r["sentence1"], r["sentence2"], r["score"]) for r in train]
    train_file = write_csv(tmp_path / "my_train.csv", rows[:32])
    my_test = write_csv(tmp_path / "my_test.csv", rows[:5] + rows[32:36])  # 5 training pairs leak into it
    my_dev = write_csv(tmp_path / "my_dev.csv", rows[36:] + rows[:2])  # so do 2 dev pairs
    data = {"source": "pairs", "path": str(train_file), "leakage_against": [str(my_test)]}
    stage = {"name": "pcc", "loss": "pearson", "data": data, "batch_size": 4, "max_steps": 4, "eval_steps": 2}
    stage |= {"dev": [str(my_dev)], "learning_rate": 1e-3}
    config = {"model": str(tiny_bert), "data_dir": str(shared_senteval), "output_dir": str(tmp_path / "run")}
    result = pcctune.train(pcctune.RunConfig.model_validate(config | {"evaluate_before": False, "stages": [stage]}))
    (record,) = result.stages
    assert record.train_examples == 27 and record.dev_pairs == {"my_dev": 4}
    assert record.leakage_filter == {"level": "normalized", "against": ["my_test.csv"], "removed": 5}
    assert record.best_dev_spearman is not None and record.best_checkpoint
    assert {"my_dev.csv", "my_test.csv", "my_train.csv"} <= set(result.data_files_sha256)
    card = (tmp_path / "run" / "stage1-pcc" / "final" / "README.md").read_text()
    assert "`my_dev` (4 pairs)" in card and "`my_test.csv` (5 training pairs removed)" in card


def test_a_stage_that_keeps_its_training_pairs_still_chooses_on_dev_pairs_filtered_against_the_runs_test_file(
    shared_senteval, tmp_path
):
    from pcctune.training.config import RunConfig

    dev = pairs_jsonl(tmp_path / "dev.jsonl", count=40, distinct=True)  # numbered: no STS test sentence
    mine = tmp_path / "mine.jsonl"
    mine.write_text("\n".join(dev.read_text().splitlines()[:10]) + "\n")  # the run's own test file: 10 of them
    stage = {"name": "raw", "loss": "pearson", "dev": str(dev)}
    stage["data"] = {"source": "pairs", "path": str(dev), "leakage": "none"}
    config = RunConfig.model_validate({"model": "m", "tasks": [str(mine)], "stages": [stage]})
    assert len(stage_dev_parts(config.stages[0], shared_senteval)["dev"]) == 30
    home = RunConfig.model_validate({"model": "m", "tasks": ["~/mine.csv"], "stages": [stage]})
    assert home.stages[0].data.leakage_against == ["~/mine.csv"]  # as written: the saved config moves between homes
