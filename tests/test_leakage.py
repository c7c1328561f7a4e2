"""The train/test leakage filter and the stage-2 set."""

from __future__ import annotations

import json

from pcctune.data.leakage import LeakageFilter, Normalization
from pcctune.data.stage2 import build_stage2_set, rescale_sick_score
from pcctune.data.sts import STSPair, STSSubset, STSTask


def _filter(normalization=Normalization.exact):
    test = STSTask("T", [STSSubset("s", [STSPair("A man  plays.", "A Woman sings.", 3.0)])])
    return LeakageFilter([test], normalization)


def test_both_orders_match_regardless_of_score():
    leakage = _filter()
    assert leakage.matches(STSPair("A man  plays.", "A Woman sings.", 0.0)) == ["T"]
    assert leakage.matches(STSPair("A Woman sings.", "A man  plays.", 5.0)) == ["T"]
    assert leakage.matches(STSPair("A man  plays.", "Someone else.", 3.0)) == []


def test_exact_by_default_normalisation_optional():
    pair = STSPair("a man plays.", "a woman sings.", 1.0)
    assert _filter().matches(pair) == []
    assert _filter(Normalization.case).matches(pair) == []  # double space still differs
    assert _filter(Normalization.whitespace_case).matches(pair) == ["T"]
    assert _filter(Normalization.whitespace).matches(STSPair("A man plays.", "A Woman sings.", 1.0)) == ["T"]


def test_filter_report_counts():
    kept, report = _filter().filter("train", [STSPair("A Woman sings.", "A man  plays.", 1.0), STSPair("x", "y", 2.0)])
    assert [p.sentence1 for p in kept] == ["x"]
    assert (report.total, report.kept, report.removed) == (2, 1, 1)
    assert report.removed_by_test_set == {"T": 1}
    assert report.examples[0]["test_sets"] == ["T"]


def test_stage2_set_on_mini_senteval(mini_senteval, tmp_path):
    result = build_stage2_set(mini_senteval)
    sources = {r.source: r for r in result.reports}
    # STS-B train pair 1 is an STS12–16 test pair reversed; SICK train pair 2 is in SICK test.
    assert (sources["STSBenchmark:train"].total, sources["STSBenchmark:train"].kept) == (3, 2)
    assert (sources["SICKRelatedness:train"].total, sources["SICKRelatedness:train"].kept) == (2, 1)
    assert len(result.pairs) == 3
    assert result.dev_overlap.removed == 1
    report = result.report_dict()
    json.dumps(report)
    assert report["total_kept"] == 3


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
    assert info.misses == 1 and info.hits >= 3  # validation, both stage-2 variants, the model cards
    sick = mini_senteval / "downstream" / "SICK" / "SICK_train.txt"
    os.utime(sick, ns=(sick.stat().st_atime_ns, sick.stat().st_mtime_ns + 10**9))
    stage2.build_stage2_set(mini_senteval)
    assert stage2._build.cache_info().misses == 2
