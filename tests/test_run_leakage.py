"""Nothing leaks from the test sets on a user's own data either: every source a stage trains or selects on is
checked before the first step, said in one line of the log and kept in the run's record; scored pairs lose their
test pairs by default (``leakage: none`` keeps them, and says so); the test evaluation is the user's choice."""

from __future__ import annotations

import json
import re
import time

import pytest
import yaml

from pcctune.data.audit import check_sources, waiting_checks
from pcctune.data.leakage import LEVELS, LeakageLevel
from pcctune.data.nli import read_snli_regression_pairs
from pcctune.data.senteval import snli_dir
from pcctune.data.sts import STSPair
from pcctune.data.tasks import load_task, load_test_tasks
from pcctune.errors import PcctuneError
from pcctune.paths import cache_root
from pcctune.training.audit import stage_audit
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.datasets import dpo_candidates, scored_pairs
from tests.conftest import SENTENCES, assert_one_line_error, pairs_jsonl, run_cli, write_csv


def _sts12_pairs(senteval, path, count=200, clean=0):
    """``count`` rows cycling through the STS12 test pairs of the mini SentEval folder (as the first rows of STS-B
    train are STS12's), then ``clean`` numbered pairs found in no test set."""
    test = load_task(senteval, "STS12").pairs
    rows = [
        (test[i % len(test)].sentence1, test[i % len(test)].sentence2, test[i % len(test)].score) for i in range(count)
    ]
    rows += [(f"{SENTENCES[i % 12]} {i}", f"{SENTENCES[(i + 5) % 12]} {i}", (i * 7) % 11 / 2) for i in range(clean)]
    return write_csv(path, rows)


def _config(tmp_path, model, senteval, data, **run) -> dict:
    stage = {"name": "pcc", "loss": "pearson", "data": data, "batch_size": 8, "max_steps": 2, "dev": "none"}
    return {"model": str(model), "data_dir": str(senteval), "output_dir": str(tmp_path / "run"), "tasks": "none"} | (
        run | {"stages": [stage]}
    )


def _config_file(tmp_path, config: dict):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


def test_a_file_of_test_pairs_is_removed_by_default_and_the_error_says_which_filter_removed_how_many(
    tiny_bert, shared_senteval, tmp_path, capsys
):
    mine = _sts12_pairs(shared_senteval, tmp_path / "my.csv")
    config = _config_file(
        tmp_path, _config(tmp_path, tiny_bert, shared_senteval, {"source": "pairs", "path": str(mine)})
    )
    code, output = run_cli(["train", config], capsys)
    assert_one_line_error(code, output, "0 examples, fewer than batch_size 8")
    assert f"the leakage filter (normalized) removed 200 of the 200 pairs of {mine}" in output


def test_the_default_run_removes_the_test_pairs_and_says_so_in_one_line(tiny_bert, shared_senteval, tmp_path, capsys):
    mine = _sts12_pairs(shared_senteval, tmp_path / "my.csv", clean=16)
    config = _config_file(
        tmp_path, _config(tmp_path, tiny_bert, shared_senteval, {"source": "pairs", "path": str(mine)})
    )
    code, output = run_cli(["train", config], capsys)
    assert code == 0, output
    (line,) = [line for line in output.splitlines() if str(mine) in line]
    assert "200 of 216 pairs are test pairs at normalized (STS12 200, STS13 200" in line, line
    assert line.endswith("; 200 at pair, 210 at near, 210 at sentence; 200 removed")  # every level's count
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["stages"][0]["train_examples"] == 16
    (audit,) = record["leakage_audit"]
    assert audit["source"] == str(mine) and audit["stage"] == "pcc" and audit["role"] == "train"
    assert (audit["level"], audit["filter"], audit["pairs"], audit["test_pairs"], audit["removed"]) == (
        "normalized",
        "normalized",
        216,
        200,
        200,
    )
    assert audit["by_task"]["STS12"] == 200 and set(audit["by_level"]) == {level.value for level in LEVELS}
    assert list((cache_root() / "leakage").glob("my.csv-*/checks.json"))  # kept for the next run, once it trained


def test_leakage_none_trains_on_them_and_the_log_and_the_record_say_so(tiny_bert, shared_senteval, tmp_path, capsys):
    mine = _sts12_pairs(shared_senteval, tmp_path / "my.csv")
    data = {"source": "pairs", "path": str(mine), "leakage": "none"}
    code, output = run_cli(
        ["train", _config_file(tmp_path, _config(tmp_path, tiny_bert, shared_senteval, data))], capsys
    )
    assert code == 0, output
    assert "my.csv: 200 of 200 pairs are test pairs at pair (STS12 200" in output
    assert "; kept (leakage: none)" in output
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["stages"][0]["train_examples"] == 200
    assert record["stages"][0]["leakage_filter"] == {"level": "none", "against": [], "removed": 0}
    (audit,) = record["leakage_audit"]
    assert (audit["filter"], audit["pairs"], audit["test_pairs"], audit["removed"]) == ("none", 200, 200, 0)


def test_tasks_none_trains_and_scores_nothing_on_the_test_sets(
    tiny_bert, shared_senteval, tmp_path, capsys, monkeypatch
):
    import pcctune.orchestration.pipeline as pipeline

    def no_test_set(*args, **kwargs):
        raise AssertionError("a test set was scored")

    monkeypatch.setattr(pipeline, "evaluate_sts", no_test_set)
    pairs = pairs_jsonl(tmp_path / "p.jsonl", distinct=True)
    config = _config(tmp_path, tiny_bert, shared_senteval, {"source": "pairs", "path": str(pairs)}, tasks="sts")
    config["evaluate_before"] = True
    code, output = run_cli(["train", _config_file(tmp_path, config), "--tasks", "none"], capsys)
    assert code == 0, output
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["sts_by_stage"] == {} and record["pairs_by_task"] == {}
    assert record["config"]["tasks"] == "none" and record["stages"][0]["train_examples"] == 48
    assert (tmp_path / "run" / "stage1-pcc" / "final" / "modules.json").is_file()


def test_tasks_names_sts_tasks_and_your_own_test_files(tiny_bert, shared_senteval, tmp_path, capsys):
    """Each named task is scored and no ``avg`` is recorded: the mean of STS12 and a user's file would read as the
    seven-task average (the same rule as ``pcctune eval --tasks``)."""
    pairs = pairs_jsonl(tmp_path / "p.jsonl", distinct=True)
    mine = write_csv(tmp_path / "my_test.csv", [(SENTENCES[i], SENTENCES[i + 1], i / 2) for i in range(6)])
    config = _config(tmp_path, tiny_bert, shared_senteval, {"source": "pairs", "path": str(pairs)})
    code, output = run_cli(["train", _config_file(tmp_path, config), "--tasks", f"STS12,{mine}"], capsys)
    assert code == 0, output
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["pairs_by_task"] == {"STS12": 7, "my_test": 6}
    assert set(record["sts_by_stage"]["pcc"]) == {"STS12", "my_test"}
    assert record["config"]["tasks"] == ["STS12", str(mine)]


@pytest.mark.parametrize(
    ("tasks", "message"),
    [("STS17", "unknown test task 'STS17'"), ("STS12,STS12", "STS12 named twice")],
)
def test_an_unknown_or_repeated_test_task_is_one_clear_error(
    tiny_bert, shared_senteval, tmp_path, capsys, tasks, message
):
    pairs = pairs_jsonl(tmp_path / "p.jsonl", distinct=True)
    config = _config(tmp_path, tiny_bert, shared_senteval, {"source": "pairs", "path": str(pairs)})
    code, output = run_cli(["train", _config_file(tmp_path, config), "--tasks", tasks], capsys)
    assert_one_line_error(code, output, message)


def test_tasks_reads_the_tables_names_and_sends_transfer_tasks_to_eval():
    """``tasks: sts-b`` is STS-B (the record's name), a transfer task is scored by ``pcctune eval`` (said so), and a
    misspelt task gets the closest name: none of them goes to the Hub as a dataset id."""
    stage = {"name": "s", "loss": "pearson", "data": {"source": "stage2"}}

    def config(tasks: str) -> RunConfig:
        return RunConfig.model_validate({"model": "m", "stages": [stage], "tasks": tasks})

    assert config("sts-b, SICK-R,stS12").tasks == ["STSBenchmark", "SICKRelatedness", "STS12"]
    assert config("STS").task_entries == ["sts"]
    with pytest.raises(ValueError, match="score the transfer tasks with pcctune eval MODEL --tasks SST2"):
        config("STS12,sst-2")
    with pytest.raises(ValueError, match="unknown test task 'STSBenchmrk'.*did you mean `STSBenchmark`"):
        config("STSBenchmrk")


def test_leakage_none_is_refused_where_it_means_nothing():
    with pytest.raises(ValueError, match="stage2 is STS-B and SICK-R train less their test pairs"):
        StageConfig.model_validate({"name": "s", "loss": "pearson", "data": {"source": "stage2", "leakage": "none"}})
    data = {"source": "pairs", "path": "p.csv", "leakage": "none", "leakage_against": ["t.csv"]}
    kept = StageConfig.model_validate({"name": "s", "loss": "pearson", "data": data})  # its dev parts are filtered
    assert kept.data.leakage_against == ["t.csv"] and not kept.data.filters_training
    stage = {"name": "s", "loss": "pearson", "data": {"source": "stage2"}}
    config = RunConfig.model_validate({"model": "m", "stages": [stage], "tasks": "STS12, my.csv"})
    assert config.tasks == ["STS12", "my.csv"] and config.task_entries == ["STS12", "my.csv"]


def test_every_dev_part_is_counted_and_a_dev_file_emptied_by_the_filter_names_its_file(shared_senteval, tmp_path):
    pairs = pairs_jsonl(tmp_path / "p.jsonl", distinct=True)
    dev = _sts12_pairs(shared_senteval, tmp_path / "my_dev.csv", count=24, clean=8)
    data = {"source": "pairs", "path": str(pairs), "leakage": "pair"}  # above it the mini SICK trial gives way
    stage = StageConfig.model_validate(
        {"name": "pcc", "loss": "pearson", "data": data, "dev": ["sick-trial", str(dev)]}
    )
    entries = {entry.source: entry for entry in stage_audit(stage, shared_senteval)}
    assert entries[str(pairs)].test_pairs == 0 and entries[str(pairs)].role == "train"
    assert (entries[str(dev)].role, entries[str(dev)].pairs, entries[str(dev)].removed) == ("dev", 32, 24)
    assert entries["sick-trial"].role == "dev" and entries["sick-trial"].filter == "pair"
    assert entries[str(dev)].filter == "normalized"  # a dev file is the user's own: normalized at least
    only_test = _sts12_pairs(shared_senteval, tmp_path / "leaky_dev.csv", count=24)
    emptied = stage.model_copy(update={"dev": [str(only_test)]})
    from pcctune.training.dev import stage_dev_parts

    with pytest.raises(PcctuneError, match=re.escape(f"removed 24 of the 24 pairs of {only_test})")):
        stage_dev_parts(emptied, shared_senteval)


def test_dpo_candidates_from_snli_lose_their_test_pairs_and_are_counted(shared_senteval):
    stage = StageConfig.model_validate(
        {"name": "dpo", "loss": "dpo", "data": {"source": "stage2"}, "dev": "none", "dpo": {"candidates": "snli"}}
    )
    every = read_snli_regression_pairs(snli_dir(shared_senteval))
    kept = dpo_candidates(stage, scored_pairs(stage.data, shared_senteval), shared_senteval)
    (dpo,) = [entry for entry in stage_audit(stage, shared_senteval) if entry.role == "dpo"]
    assert dpo.pairs == len(every) and 0 < dpo.removed == len(every) - len(kept)
    assert {entry.source for entry in stage_audit(stage, shared_senteval) if entry.role == "train"} == {
        "STSBenchmark:train",
        "SICKRelatedness:train",
    }


def test_a_regression_heads_nli_warm_up_goes_through_the_stages_filter_and_is_counted(
    shared_senteval, tiny_bert, monkeypatch
):
    """At `sentence`, the NLI pairs a regression head is first fitted on hold no test sentence either, and the audit
    names them; the head is fitted on exactly those pairs."""
    import pcctune.training.stage as stage_module
    from pcctune.data.leakage import TestIndex
    from pcctune.modeling.build import build_model
    from pcctune.training.batching import plan_batches
    from pcctune.training.datasets import filtered_snli_pairs
    from pcctune.training.stage import stage_loss

    data = {"source": "stage2", "leakage": "sentence"}
    stage = StageConfig.model_validate(
        {"name": "reg", "loss": "smooth_k2", "data": data, "dev": "none", "regression": {"head_warmup": "nli"}}
    )
    every = read_snli_regression_pairs(snli_dir(shared_senteval))
    kept = filtered_snli_pairs(stage, shared_senteval)
    (head,) = [entry for entry in stage_audit(stage, shared_senteval) if entry.role == "head"]
    assert head.pairs == len(every) and 0 < head.removed == len(every) - len(kept)
    checked = TestIndex(load_test_tasks(shared_senteval)).check_all(kept)
    assert not any(check.flagged(LeakageLevel.sentence) for check in checked)
    fitted: list = []
    monkeypatch.setattr(stage_module, "warm_up_head", lambda loss, pairs, seed: fitted.append(pairs))
    stage_loss(stage, build_model(str(tiny_bert)), plan_batches(stage.batch_size), None, shared_senteval, 1)
    assert fitted == [kept]


def test_triplets_are_counted_at_pair_and_sentence_level_quickly_and_never_filtered(shared_senteval, tmp_path):
    """SimCSE's 275,601 triplets are checked with dictionary look-ups; 50,000 here must take a few seconds at most."""
    s = SENTENCES
    rows = [(f"anchor {i} is here.", f"positive {i} is there.", f"negative {i} is elsewhere.") for i in range(50_000)]
    rows[:3] = [
        (s[1], s[0], "A clean negative."),  # an STS12 test pair in reverse; its negative pair holds a test sentence
        (s[1], "Something new.", "Something else."),  # a test sentence in both pairs
        (s[2], s[3], s[6]),  # a test pair, and two test sentences that no test set pairs
    ]
    path = write_csv(tmp_path / "nli.csv", rows, header=("sent0", "sent1", "hard_neg"))
    data = {"source": "simcse_csv", "path": str(path)}
    stage = StageConfig.model_validate({"name": "s1", "loss": "infonce", "data": data, "dev": "none"})
    started = time.perf_counter()
    (entry,) = stage_audit(stage, shared_senteval)
    assert time.perf_counter() - started < 10
    assert (entry.pairs, entry.test_pairs, entry.removed, entry.filter) == (100_000, 2, 0, "none")
    assert entry.by_level == {"pair": 2, "normalized": 2, "sentence": 6}
    assert entry.by_task["STS12"] == 2


def test_the_checks_agree_with_every_level_of_the_filter(shared_senteval, tmp_path):
    mine = pairs_jsonl(tmp_path / "mine.jsonl", count=60)  # the test sentences, paired every which way
    for level in LeakageLevel:
        data = {"source": "pairs", "path": str(mine), "leakage": level.value}
        stage = StageConfig.model_validate({"name": "s", "loss": "pearson", "data": data, "dev": "none"})
        (entry,) = stage_audit(stage, shared_senteval)
        assert entry.removed == 60 - len(scored_pairs(stage.data, shared_senteval)) == entry.by_level[level.value]


def test_a_pair_check_and_an_exact_check_agree_where_both_look(shared_senteval):
    from pcctune.data.leakage import TestIndex
    from pcctune.data.tasks import load_test_tasks

    index = TestIndex(load_test_tasks(shared_senteval))
    pairs = [STSPair(SENTENCES[i % 12], SENTENCES[(i * 5 + 1) % 12] + ("!" if i % 3 else ""), 1.0) for i in range(36)]
    full = index.check_all(pairs)
    exact = index.check_exact([(p.sentence1, p.sentence2) for p in pairs])
    for a, b in zip(full, exact, strict=True):
        assert (a.pair, a.normalized, a.sentence) == (b.pair, b.normalized, b.sentence)


def counted_checks(monkeypatch, tmp_path) -> list[int]:
    """A cache of the test's own, and a list that grows by one at each check of a source against the test sets."""
    from pcctune.data.leakage import TestIndex

    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    calls: list[int] = []
    real = TestIndex.check_all
    monkeypatch.setattr(TestIndex, "check_all", lambda self, pairs: calls.append(1) or real(self, pairs))
    return calls


def test_checks_a_run_computed_before_its_first_step_are_not_computed_again_when_kept(
    shared_senteval, tmp_path, monkeypatch
):
    """Inside a run's scope the audit checks a source without writing the cache; the stage-2 set, built next, keeps
    the same checks in the cache instead of checking the source a second time."""
    tasks, calls = load_test_tasks(shared_senteval), counted_checks(monkeypatch, tmp_path)
    pairs = load_task(shared_senteval, "STS12").pairs[:5]
    with waiting_checks():
        audited = check_sources(tasks, [("my.csv", pairs, "train")], 0.8, keep=False)[0]
        assert len(calls) == 1 and not (cache_root() / "leakage").exists()  # nothing written yet
        kept = check_sources(tasks, [("my.csv", pairs, "train")], 0.8)[0]
        assert len(calls) == 1 and kept.checks == audited.checks and (cache_root() / "leakage").exists()
        assert check_sources(tasks, [("my.csv", pairs[:3], "train")], 0.8)[0] and len(calls) == 2  # other pairs


def test_checks_waiting_for_a_run_that_failed_are_dropped_with_it(shared_senteval, tmp_path, monkeypatch):
    """Nothing lingers in the process: a scope left without ``keep()`` writes nothing and a later scope checks
    again; outside any scope a check is remembered by nobody; ``keep()`` writes what waits."""
    tasks, calls = load_test_tasks(shared_senteval), counted_checks(monkeypatch, tmp_path)
    pairs = load_task(shared_senteval, "STS12").pairs[:4]
    source = [("mine.csv", pairs, "train")]
    with pytest.raises(RuntimeError), waiting_checks():
        check_sources(tasks, source, 0.8, keep=False)
        raise RuntimeError("the run failed")
    check_sources(tasks, source, 0.8, keep=False)
    check_sources(tasks, source, 0.8, keep=False)
    assert len(calls) == 3 and not (cache_root() / "leakage").exists()
    with waiting_checks() as waiting:
        check_sources(tasks, source, 0.8, keep=False)
        waiting.keep()
    assert len(calls) == 4 and (cache_root() / "leakage").exists()
    check_sources(tasks, source, 0.8, keep=False)  # read from the cache now
    assert len(calls) == 4


def test_a_pair_file_changed_between_two_runs_in_one_process_is_read_again(shared_senteval, tmp_path, monkeypatch):
    """The source's pairs and its dev file are remembered per file state, not per config: a notebook that edits
    its files and trains again trains and selects on what the files hold now."""
    from pcctune.training.config import StageConfig
    from pcctune.training.dev import stage_dev_parts

    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    mine, dev = tmp_path / "mine.csv", tmp_path / "dev.csv"
    first = [(f"a first sentence number {i}", f"its partner number {i}", i % 5) for i in range(6)]
    write_csv(mine, first)
    write_csv(dev, first[:3])
    stage = StageConfig(
        name="pcc", loss="pearson", dev=[str(dev)], data={"source": "pairs", "path": str(mine), "leakage": "pair"}
    )
    assert [p.sentence1 for p in scored_pairs(stage.data, shared_senteval)] == [row[0] for row in first]
    assert len(next(iter(stage_dev_parts(stage, shared_senteval).values()))) == 3
    later = [(f"an edited sentence number {i}", f"another partner {i}", 4 - i % 5) for i in range(8)]
    write_csv(mine, later)
    write_csv(dev, later[:5])
    assert [p.sentence1 for p in scored_pairs(stage.data, shared_senteval)] == [row[0] for row in later]
    assert len(next(iter(stage_dev_parts(stage, shared_senteval).values()))) == 5


def test_a_test_file_or_the_senteval_data_changed_between_two_runs_filters_the_pairs_again(
    mini_senteval, tmp_path, monkeypatch
):
    """The filter's other inputs are keyed too: a user's own test file (``leakage_against``) and the STS test sets
    edited between two runs in one process remove what they hold now."""
    from pcctune.training.config import DataConfig

    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    rows = [(f"a training sentence number {i}", f"its own partner number {i}", i % 5) for i in range(6)]
    mine, theirs = write_csv(tmp_path / "mine.csv", rows), tmp_path / "my_test.csv"
    other = ("a sentence of the user's test set", "and its partner there", 2.0)
    more = ("another sentence of that test set", "and the partner it has", 4.0)
    write_csv(theirs, [rows[0], other, more])
    data = DataConfig(source="pairs", path=str(mine), leakage="pair", leakage_against=[str(theirs)])
    kept = lambda: [p.sentence1 for p in scored_pairs(data, mini_senteval)]  # noqa: E731
    assert kept() == [row[0] for row in rows[1:]]
    write_csv(theirs, [*rows[2:4], other, more])
    assert kept() == [row[0] for i, row in enumerate(rows) if i not in (2, 3)]
    sick_test = mini_senteval / "downstream" / "SICK" / "SICK_test_annotated.txt"
    with sick_test.open("a", encoding="utf-8") as handle:
        handle.write(f"99\t{rows[4][0]}\t{rows[4][1]}\t2.5\tNEUTRAL\n")
    assert kept() == [row[0] for i, row in enumerate(rows) if i not in (2, 3, 4)]
