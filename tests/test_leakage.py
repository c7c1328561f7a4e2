"""The train/test leakage filter and the stage-2 set."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pcctune.data.leakage import LEVELS, LeakageLevel, TestIndex, normalize_sentence, split_clean
from pcctune.data.stage2 import build_stage2_set, rescale_sick_score
from pcctune.data.sts import STSPair, STSSubset, STSTask
from pcctune.errors import PcctuneError

TEST_PAIR = STSPair(
    "A man is playing a large guitar on the stage.", "A woman is slicing a red onion in the kitchen.", 3.0
)
# Each training pair below is caught first by the level it is named after, in either order.
FIRST_CAUGHT_BY = {
    "pair": (TEST_PAIR.sentence2, TEST_PAIR.sentence1),
    "normalized": ("a MAN is playing a large guitar on the stage!", "A woman is slicing a red onion in the kitchen"),
    "near": ("A man is playing a large guitar on a stage.", "A woman is slicing a red onion in a kitchen."),
    "sentence": (TEST_PAIR.sentence1, "Stocks fell sharply on Monday morning."),
}
CLEAN = ("The cat sleeps on the mat all afternoon.", "A child is riding a bicycle down the hill.")


def _index() -> TestIndex:
    other = STSPair("Two dogs run across a snowy field.", "A dog runs in the snow.", 4.0)
    return TestIndex([STSTask("T", [STSSubset("s", [TEST_PAIR])]), STSTask("U", [STSSubset("s", [other])])])


def test_normalization_folds_unicode_case_punctuation_and_whitespace():
    assert normalize_sentence("  Ｃafé —  it's   GREAT!! ") == normalize_sentence("café it s great")
    for invisible in ("\u200b", "\u200d", "\u00ad", "\u2060", "\ufeff"):  # inside a word, it splits nothing
        assert normalize_sentence(f"A ma{invisible}n plays") == normalize_sentence("A man plays")


def test_normalization_keeps_the_combining_marks_of_a_word_and_drops_a_stray_one():
    """A vowel sign or a harakat is part of its word: two words that differ in them stay two (they were one, and a
    filter above `pair` removed a pair it should have kept); a mark after a space or punctuation goes with it."""
    assert normalize_sentence("किताब") != normalize_sentence("कुतुब")
    assert normalize_sentence("كَتَبَ") != normalize_sentence("كُتُب")
    assert normalize_sentence("İstanbul") == "i\u0307stanbul"  # one word, not "i stanbul"
    assert normalize_sentence("I'\u0301m proud") == normalize_sentence("I'm proud") == "i m proud"


@pytest.mark.parametrize("level", list(LeakageLevel))
@pytest.mark.parametrize("reverse", [False, True])
def test_each_level_catches_a_pair_that_no_lower_level_catches_in_either_order(level, reverse):
    first, second = FIRST_CAUGHT_BY[level.value]
    pair = STSPair(second, first, 1.0) if reverse else STSPair(first, second, 1.0)
    (check,) = _index().check_all([pair])
    assert check.first_level() == level
    assert check.hits(level) == ("T",)
    for other in LEVELS:
        assert check.flagged(other) == other.includes(level)


def test_a_clean_pair_is_flagged_by_no_level():
    (check,) = _index().check_all([STSPair(*CLEAN, 2.0)])
    assert check.first_level() is None and check.sentences_in_test == 0
    assert not any(check.flagged(level) for level in LEVELS)


def test_sentence_level_counts_one_or_both_sentences_and_the_near_threshold_is_a_setting():
    index = _index()
    mixed = STSPair(TEST_PAIR.sentence1, "A dog runs in the snow.", 1.0)  # both sentences in tests, never paired
    one = STSPair(*FIRST_CAUGHT_BY["sentence"], 1.0)
    assert [c.sentences_in_test for c in index.check_all([mixed, one])] == [2, 1]
    near = STSPair(*FIRST_CAUGHT_BY["near"], 1.0)
    assert TestIndex(index_tasks := [STSTask("T", [STSSubset("s", [TEST_PAIR])])], 0.99).check_all([near])[0].near == ()
    assert TestIndex(index_tasks, 0.6).check_all([near])[0].near == ("T",)


@pytest.mark.parametrize(("threshold", "flagged"), [(0.4, True), (0.45, False)])
def test_a_near_threshold_below_one_half_is_searched_as_asked(threshold, flagged):
    """Each sentence of this pair is within 0.447 and 0.404 (character 3-gram Jaccard) of the test pair's: flagged
    at 0.4, just let through at 0.45 and reported as the closest pair below it (a search floored at 0.5 missed it)."""
    loose = STSPair("A man was playing the guitar.", "A woman slices a red onion.", 1.0)
    check = TestIndex([STSTask("T", [STSSubset("s", [TEST_PAIR])])], threshold).check_all([loose])[0]
    assert check.near == (("T",) if flagged else ())
    assert check.near_similarity == pytest.approx(0.404, abs=1e-3)


@pytest.mark.parametrize("threshold", [0.0, -0.2, 1.5])
def test_a_near_threshold_outside_zero_to_one_is_refused(threshold):
    with pytest.raises(PcctuneError, match="not a Jaccard similarity"):
        TestIndex([STSTask("T", [STSSubset("s", [TEST_PAIR])])], threshold)


def test_a_filter_keeps_exactly_the_pairs_no_level_up_to_it_flags():
    pairs = [STSPair(*FIRST_CAUGHT_BY[level.value], 1.0) for level in LEVELS] + [STSPair(*CLEAN, 2.0)]
    checks = _index().check_all(pairs)
    for number, level in enumerate(LEVELS, 1):
        kept, removed = split_clean(pairs, checks, level)
        assert len(removed) == number and kept[-1].sentence1 == CLEAN[0] and len(kept) == len(pairs) - number


def test_stage2_set_on_mini_senteval(mini_senteval, tmp_path):
    result = build_stage2_set(mini_senteval)
    report = result.report_dict()
    sources = {r["source"]: r for r in report["sources"]}
    # STS-B train pair 1 is an STS12–16 test pair reversed; SICK train pair 2 is in SICK test.
    assert sources["STSBenchmark:train"]["total"] == 3 and sources["STSBenchmark:train"]["removed"]["pair"] == 1
    assert report["kept_by_source"] == {"STSBenchmark:train": 2, "SICKRelatedness:train": 1}
    assert len(result.pairs) == 3 and report["total_kept"] == 3 and report["level"] == "pair"
    assert {d["source"]: d["removed"]["pair"] for d in report["dev_sets"]}["STSBenchmark:dev"] == 1
    json.dumps(report)


def test_sick_rescale():
    assert rescale_sick_score(1.0) == 0.0 and rescale_sick_score(5.0) == 5.0 and rescale_sick_score(3.0) == 2.5


def test_real_stage2_set_and_the_papers_1543_contrastive_pairs():
    """On the shared SentEval data: 5,398 filtered pairs; SICK rescaled to 0–5 and ≥ 4 give the paper's 1,543."""
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.datasets import contrastive_pairs

    senteval = resolve_senteval_dir(None)
    assert len(build_stage2_set(senteval).pairs) == 5398
    rescaled = build_stage2_set(senteval, rescale_sick=True).pairs
    as_pairs = [STSPair(p.sentence1, p.sentence2, p.score) for p in rescaled]
    assert len(contrastive_pairs(as_pairs, 4.0, inclusive=True)) == 1543
    assert len(contrastive_pairs(as_pairs, 4.0)) == 1328


def test_the_stage2_set_is_built_once_per_run_and_again_when_its_files_change(mini_senteval, tiny_bert, tmp_path):
    import os

    import pcctune.data.stage2 as stage2
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig
    from tests.conftest import one_step_stage2

    stage2._build.cache_clear()
    config = {
        "model": str(tiny_bert),
        "data_dir": str(mini_senteval),
        "output_dir": str(tmp_path / "run"),
        "evaluate_before": False,
        "stages": [one_step_stage2()],
    }
    run_pipeline(RunConfig.model_validate(config), compare=["pearson", "cosent"])
    info = stage2._build.cache_info()
    assert info.misses == 1 and info.hits >= 1  # built once; validation, both variants and the cards reuse it
    sick = mini_senteval / "downstream" / "SICK" / "SICK_train.txt"
    os.utime(sick, ns=(sick.stat().st_atime_ns, sick.stat().st_mtime_ns + 10**9))
    stage2.build_stage2_set(mini_senteval)
    assert stage2._build.cache_info().misses == 2


def test_the_cached_stage2_set_cannot_be_changed_by_a_caller(mini_senteval):
    first = build_stage2_set(mini_senteval)
    with pytest.raises(AttributeError):
        first.pairs.append(first.pairs[0])  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.pairs[0].score = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.level = LeakageLevel.sentence  # type: ignore[misc]
    first.report_dict()["total_kept"] = -1
    again = build_stage2_set(mini_senteval)
    assert again is first and again.report_dict()["total_kept"] == len(again.pairs) == 3


def _sentences_seen(senteval, built) -> tuple[set[str], list[str]]:
    """The normalized sentences of the seven test sets, and those of a stage-2 set found among them."""
    from pcctune.data.tasks import load_test_tasks

    tests = {
        normalize_sentence(s)
        for task in load_test_tasks(senteval)
        for p in task.pairs
        for s in (p.sentence1, p.sentence2)
    }
    return tests, [s for p in built.pairs for s in (p.sentence1, p.sentence2) if normalize_sentence(s) in tests]


def test_sentence_level_leaves_no_test_sentence_on_mini_senteval(mini_senteval):
    built = build_stage2_set(mini_senteval, LeakageLevel.sentence)
    tests, seen = _sentences_seen(mini_senteval, built)
    assert tests and seen == []
    assert built.report_dict()["level"] == "sentence"


@pytest.mark.slow
def test_sentence_level_on_the_standard_data_leaves_no_test_sentence():
    """On the shared SentEval data: the sentence-disjoint stage-2 set, and every level's count."""
    from pcctune.paths import resolve_senteval_dir

    senteval = resolve_senteval_dir(None)
    built = build_stage2_set(senteval, LeakageLevel.sentence)
    assert built.pairs and _sentences_seen(senteval, built)[1] == []
    kept = [build_stage2_set(senteval, level).report_dict()["total_kept"] for level in LEVELS]
    assert kept[0] == 5398 and kept == sorted(kept, reverse=True) and kept[-1] == len(built.pairs)


def test_data_audit_command_reports_every_level_and_writes_the_record(capsys, mini_senteval, tmp_path):
    from pcctune.results import AuditResult
    from tests.conftest import run_cli

    out = tmp_path / "audit.json"
    code, printed = run_cli(["data", "audit", "--data", str(mini_senteval), "--output", str(out)], capsys)
    assert code == 0 and "normalized" in printed and "sentence" in printed
    record = AuditResult.from_disk(out)
    sources = {s.source: s for s in record.sources}
    assert set(sources) == {"STSBenchmark:train", "SICKRelatedness:train", "SICKRelatedness:trial", "STSBenchmark:dev"}
    assert sources["STSBenchmark:train"].removed["pair"] == 1 and sources["SICKRelatedness:trial"].role == "dev"
    assert all(s.removed == dict(sorted(s.removed.items(), key=lambda kv: LEVELS.index(kv[0]))) for s in record.sources)
    assert len(record.test_sets) == 7 and record.data_hashes


def test_data_audit_of_a_pairs_file_against_the_users_own_test_file(capsys, tmp_path):
    from pcctune.results import AuditResult
    from tests.conftest import run_cli

    test_file, train_file = tmp_path / "mytest.csv", tmp_path / "train.csv"
    test_file.write_text(f"sentence1,sentence2,score\n{TEST_PAIR.sentence1},{TEST_PAIR.sentence2},3\n")
    rows = [FIRST_CAUGHT_BY["normalized"], CLEAN]
    train_file.write_text("sentence1,sentence2,score\n" + "".join(f'"{a}","{b}",1\n' for a, b in rows))
    out = tmp_path / "audit.json"
    args = ["data", "audit", "--pairs", str(train_file), "--against", str(test_file), "--output", str(out)]
    code, _ = run_cli(args, capsys)
    (source,) = AuditResult.from_disk(out).sources
    assert code == 0 and source.total == 2 and source.removed == {"pair": 0, "normalized": 1, "near": 1, "sentence": 1}
    assert source.by_test_set["normalized"] == {"mytest": 1}


def test_data_audit_of_a_run_config_checks_against_the_test_sets_the_run_filters(capsys, tmp_path, mini_senteval):
    """With ``--config``, each stage is audited against the user's own test sets it is filtered against too, as the
    run filters: a pair of theirs in its training file is counted, not only the seven's; a stage not filtered
    against them is not."""
    import yaml

    from pcctune.results import AuditResult
    from tests.conftest import run_cli

    test_file, train_file = tmp_path / "mytest.csv", tmp_path / "train.csv"
    others = "".join(f"Another test sentence {i}.,A different one {i}.,{i}\n" for i in range(2))
    test_file.write_text(f"sentence1,sentence2,score\n{TEST_PAIR.sentence1},{TEST_PAIR.sentence2},3\n{others}")
    rows = [FIRST_CAUGHT_BY["normalized"], CLEAN]
    train_file.write_text("sentence1,sentence2,score\n" + "".join(f'"{a}","{b}",1\n' for a, b in rows))
    data = {"source": "pairs", "path": str(train_file), "leakage_against": [str(test_file)], "limit": 1}
    stage = {"name": "pcc", "loss": "pearson", "data": data, "batch_size": 2, "max_steps": 1}
    other = stage | {"name": "plain", "data": {"source": "pairs", "path": str(train_file)}}  # not filtered against it
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"model": "m", "stages": [stage, other]}))
    out = tmp_path / "audit.json"
    args = ["data", "audit", "--config", str(config), "--data", str(mini_senteval), "--output", str(out)]
    code, printed = run_cli(args, capsys)
    assert code == 0, printed
    record = AuditResult.from_disk(out)
    source, plain = record.sources
    assert len(record.test_sets) == 8 and "mytest" in record.test_sets
    assert source.source == "run.yaml:pcc" and source.removed["normalized"] == 1
    assert source.total == 2  # the whole source, as the run's own audit counts it (limit cuts after the filter)
    assert source.by_test_set["normalized"] == {"mytest": 1}
    assert plain.source == "run.yaml:plain" and plain.removed["normalized"] == 0  # each stage its own test sets


def test_the_leakage_page_quotes_the_committed_audit_record():
    """docs/leakage.md's counts are the committed audit's (reproductions/leakage/audit.json)."""
    import re
    from pathlib import Path

    from pcctune.results import AuditResult

    root = Path(__file__).resolve().parents[1]
    record = {s.source: s for s in AuditResult.from_disk(root / "reproductions" / "leakage" / "audit.json").sources}
    labels = {
        "STS-B train": "STSBenchmark:train",
        "SICK-R train": "SICKRelatedness:train",
        "SICK trial (dev)": "SICKRelatedness:trial",
        "STS-B dev (dev)": "STSBenchmark:dev",
    }
    page = (root / "docs" / "leakage.md").read_text(encoding="utf-8")
    for label, source in labels.items():
        row = re.search(rf"^\| {re.escape(label)} \|(.*)\|$", page, re.MULTILINE)
        assert row, label
        s = record[source]
        expected = [
            s.total,
            *(s.removed[level] for level in LEVELS),
            s.sentences_in_test["1"],
            s.sentences_in_test["2"],
        ]
        assert [int(cell) for cell in row.group(1).split("|")] == expected
    train = [record[source] for source in ("STSBenchmark:train", "SICKRelatedness:train")]
    kept = [sum(s.total - s.removed[level] for s in train) for level in LEVELS]
    assert f"{kept[0]} pairs at `pair`, {kept[1]} at `normalized`, {kept[2]} at `near` and {kept[3]} at" in page
    left = [s.total - s.removed["sentence"] for s in train]
    assert f"only {left[0]} STS-B and {left[1]} SICK pairs are left" in page


def _respelled_test_pairs(senteval, count: int = 8) -> list[tuple[str, str, float]]:
    """``count`` distinct test pairs of the mini SentEval data, each as the model reads it but not letter for letter:
    its first sentence with doubled spaces, in another case, or with another stop, in turn."""
    from pcctune.data.tasks import load_test_tasks

    seen: dict[tuple[str, str], float] = {}
    for task in load_test_tasks(senteval):
        for pair in task.pairs:
            seen.setdefault((pair.sentence1, pair.sentence2), pair.score)
    respell = (lambda s: s.replace(" ", "  "), str.upper, lambda s: s.rstrip(".") + "!")
    chosen = list(seen.items())[:count]
    return [(respell[i % 3](a), b, score) for i, ((a, b), score) in enumerate(chosen)]


def test_a_users_test_pairs_respaced_recased_or_restopped_are_removed_by_default_and_the_line_says_so(
    shared_senteval, tmp_path
):
    from pcctune.training.audit import audit_line, stage_audit
    from pcctune.training.config import StageConfig
    from pcctune.training.datasets import scored_pairs
    from tests.conftest import write_csv

    mine = write_csv(tmp_path / "mine.csv", _respelled_test_pairs(shared_senteval))
    stage = {"name": "pcc", "loss": "pearson", "data": {"source": "pairs", "path": str(mine)}, "dev": "none"}
    default = StageConfig.model_validate(stage)
    assert default.data.leakage == LeakageLevel.normalized
    (entry,) = stage_audit(default, shared_senteval)
    assert (entry.filter, entry.pairs, entry.test_pairs, entry.removed, entry.by_level["pair"]) == (
        "normalized",
        8,
        8,
        8,
        0,
    )
    line = audit_line(entry)
    assert "8 of 8 pairs are test pairs at normalized (" in line and "; 0 at pair, 8 at near" in line, line
    assert line.endswith("; 8 removed") and scored_pairs(default.data, shared_senteval) == []
    # at the paper's level they are kept, and the line still says what the stricter levels find
    paper = StageConfig.model_validate(stage | {"data": stage["data"] | {"leakage": "pair"}})
    line = audit_line(stage_audit(paper, shared_senteval)[0])
    assert ": 0 of 8 pairs are test pairs at pair; 8 at normalized, 8 at near, 8 at sentence" in line, line
    assert len(scored_pairs(paper.data, shared_senteval)) == 8


def test_the_built_in_stage2_set_keeps_the_papers_filter_by_default():
    """A stage on ``stage2`` with no level is filtered at ``pair``: the paper's 991 + 4,407 = 5,398 pairs."""
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.config import DataConfig
    from pcctune.training.datasets import stage2_set

    data = DataConfig(source="stage2")
    assert data.leakage == LeakageLevel.pair and DataConfig(source="snli").leakage == LeakageLevel.pair
    report = stage2_set(data, resolve_senteval_dir(None)).report_dict()
    assert report["level"] == "pair" and report["total_kept"] == 5398
    assert report["kept_by_source"] == {"STSBenchmark:train": 991, "SICKRelatedness:train": 4407}


def test_a_hub_layout_test_folder_in_tasks_is_filtered_against_in_training_and_dev(shared_senteval, tmp_path):
    from pcctune.data.pairs import load_pair_set
    from pcctune.training.audit import stage_audit
    from pcctune.training.config import RunConfig
    from pcctune.training.datasets import scored_pairs
    from pcctune.training.dev import stage_dev_parts
    from tests.conftest import SENTENCES, write_csv

    theirs = [(f"{SENTENCES[i]} Take {i}.", f"{SENTENCES[(i + 5) % 12]} Take {i}.", i % 5) for i in range(10)]
    clean = [(f"{SENTENCES[i]} Other {i}.", f"{SENTENCES[(i + 3) % 12]} Other {i}.", i % 4) for i in range(6)]
    folder = tmp_path / "my_set"
    folder.mkdir()
    write_csv(folder / "test.csv", theirs)
    train, dev = write_csv(tmp_path / "train.csv", theirs + clean), write_csv(tmp_path / "dev.csv", clean + theirs)
    stage = {"name": "pcc", "loss": "pearson", "data": {"source": "pairs", "path": str(train)}, "dev": [str(dev)]}
    config = RunConfig.model_validate({"model": "m", "tasks": [str(folder), "owner/their-set"], "stages": [stage]})
    (stage,) = config.stages
    assert stage.data.leakage_against == [str(folder), "owner/their-set"]  # a Hub id too (not read here)
    only_folder = stage.model_copy(update={"data": stage.data.model_copy(update={"leakage_against": [str(folder)]})})
    entries = {entry.source: entry for entry in stage_audit(only_folder, shared_senteval)}
    for source in (train, dev):
        assert (entries[str(source)].test_pairs, entries[str(source)].removed) == (10, 10)
        assert entries[str(source)].by_task == {str(folder): 10}
    assert len(scored_pairs(only_folder.data, shared_senteval)) == 6
    assert len(stage_dev_parts(only_folder, shared_senteval)["dev"]) == 6
    assert load_pair_set(folder / "test.csv").name == "my_set"  # a test.csv is named by its folder, not "test"
