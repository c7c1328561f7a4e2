"""``pcctune compare`` and its statistics: a known gain over seeds is a win, no gain a tie, pairing by seed narrows
the interval (and the columns are then the paired seeds' means, the other runs named), a paired bootstrap over test
pairs tells two models apart (or calls identical ones a tie) and scores a run's model as the run did, a run trained
with several final-stage variants is compared through the one named, and NaN is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from scipy.stats import bootstrap

import pcctune
from pcctune.data.tasks import SEVEN_TASKS
from pcctune.errors import PcctuneError
from pcctune.evaluation.compare import paired_bootstrap, paired_bootstrap_mean, seed_difference
from pcctune.modeling.build import build_model
from pcctune.orchestration.compare_models import compare_models, run_record
from pcctune.results import CompareResult, Difference, RunResult, StageRecord, load_result
from pcctune.training.config import RunConfig
from tests.conftest import assert_one_line_error, run_cli, stage_record

SEEDS = range(1, 6)


def runs(mean: float, spread: float, seed: int = 0) -> dict[int, float]:
    """Five seeds' scores around ``mean``: the seed effect a side shares with the other side's run of that seed."""
    rng = np.random.default_rng(seed)
    return {s: mean + float(rng.normal(0, spread)) for s in SEEDS}


def plus(a: dict[int, float], gain: float, noise: float, seed: int = 1) -> dict[int, float]:
    rng = np.random.default_rng(seed)
    return {s: value + gain + float(rng.normal(0, noise)) for s, value in a.items()}


def test_a_known_gain_over_paired_seeds_is_a_win():
    a = runs(80.0, 0.5)
    difference = seed_difference(a, plus(a, 2.0, 0.1))
    assert difference.method == "paired t" and difference.paired and difference.n == 5
    assert 0 < difference.low < 2.0 < difference.high and difference.mean == pytest.approx(2.0, abs=0.15)
    assert difference.verdict == "win"
    assert seed_difference(plus(a, 2.0, 0.1), a).verdict == "loss"
    assert difference.sentence().startswith("B − A = +2.") and difference.sentence().endswith(
        "over 5 paired seeds: a win for B"
    )


def test_no_gain_is_a_tie():
    a = runs(80.0, 0.5)
    difference = seed_difference(a, plus(a, 0.0, 0.3))
    assert difference.low < 0 < difference.high and difference.verdict == "tie"
    assert difference.sentence().endswith(": a tie")


def test_the_paired_interval_is_the_t_interval_of_the_per_seed_differences():
    a, b = runs(80.0, 0.5), runs(80.5, 0.5, seed=7)
    difference = seed_difference(a, b)
    expected = stats.ttest_rel([b[s] for s in SEEDS], [a[s] for s in SEEDS]).confidence_interval(0.95)
    assert (difference.low, difference.high) == pytest.approx((expected.low, expected.high))


def test_without_shared_seeds_welch_and_pairing_narrows_the_interval():
    """Seed effects (spread 2.0) shared by both sides hide a gain of 1.0 from an unpaired comparison; pairing by seed
    takes them out. Welch's interval is checked against its formula (Welch–Satterthwaite degrees of freedom)."""
    a = runs(80.0, 2.0)
    b = plus(a, 1.0, 0.1)
    paired = seed_difference(a, b)
    unpaired = seed_difference(a, {seed + 100: value for seed, value in b.items()})
    assert paired.method == "paired t" and paired.verdict == "win"
    assert unpaired.method == "Welch t" and not unpaired.paired and (unpaired.n_a, unpaired.n_b) == (5, 5)
    assert unpaired.verdict == "tie" and unpaired.mean == pytest.approx(paired.mean)
    assert unpaired.high - unpaired.low > 5 * (paired.high - paired.low)
    va, vb = np.var(list(a.values()), ddof=1) / 5, np.var(list(b.values()), ddof=1) / 5
    df = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
    half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    assert (unpaired.low, unpaired.high) == pytest.approx((unpaired.mean - half, unpaired.mean + half))
    assert "over 5 runs of A and 5 of B (unpaired)" in unpaired.sentence()


def test_one_run_on_a_side_has_no_interval():
    difference = seed_difference({1: 80.0, 2: 80.4}, {1: 81.0})  # one shared seed: unpaired, and B has one run
    assert difference.mean == pytest.approx(0.8) and difference.low is None and difference.high is None
    assert difference.verdict is None and difference.method is None
    assert difference.sentence() == "B − A = +0.80 over 2 runs of A and 1 of B: no interval (it needs 2 runs a side)"
    with pytest.raises(PcctuneError, match="runs on both sides"):
        seed_difference({}, {1: 80.0})


def test_runs_that_do_not_spread_give_the_point_as_interval():
    assert seed_difference({1: 80.0, 2: 81.0}, {1: 80.0, 2: 81.0}).verdict == "tie"  # differences all 0: [0, 0]
    gain = seed_difference({1: 80.0, 2: 80.0}, {3: 81.0, 4: 81.0})
    assert (gain.low, gain.high, gain.verdict) == (1.0, 1.0, "win")


def scored_pairs(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gold scores, a poor model's predictions (ρ about 0.4) and a good one's (ρ about 0.95)."""
    rng = np.random.default_rng(seed)
    gold = rng.uniform(0, 5, n)
    return gold, gold + rng.normal(0, 3.0, n), gold + rng.normal(0, 0.5, n)


def test_a_bootstrap_of_identical_predictions_is_exactly_zero_and_a_tie():
    gold, poor, _ = scored_pairs()
    difference = paired_bootstrap(gold, poor, poor, resamples=500)
    assert (difference.mean, difference.low, difference.high) == (0.0, 0.0, 0.0)
    assert difference.verdict == "tie" and difference.method == "paired bootstrap" and difference.n == 300
    monotone = paired_bootstrap(gold, poor, 2 * poor + 1, resamples=500)  # the same ranks: the same Spearman
    assert (monotone.mean, monotone.low, monotone.high, monotone.verdict) == (0.0, 0.0, 0.0, "tie")


def test_a_bootstrap_tells_a_much_better_model_apart():
    gold, poor, good = scored_pairs()
    expected = (stats.spearmanr(good, gold).statistic - stats.spearmanr(poor, gold).statistic) * 100
    win = paired_bootstrap(gold, poor, good, resamples=500, seed=3)
    assert win.mean == pytest.approx(expected) and 0 < win.low < win.mean < win.high and win.verdict == "win"
    assert win.sentence().endswith("over 300 test pairs (paired bootstrap): a win for B")
    assert paired_bootstrap(gold, good, poor, resamples=500, seed=3).verdict == "loss"
    assert paired_bootstrap(gold, poor, good, resamples=500, seed=3) == win  # seeded: the same interval again
    pearson = paired_bootstrap(gold, poor, good, statistic="pearson", resamples=500)
    assert pearson.mean == pytest.approx((np.corrcoef(good, gold)[0, 1] - np.corrcoef(poor, gold)[0, 1]) * 100)


def test_a_small_difference_on_few_pairs_is_a_tie():
    gold, poor, _ = scored_pairs(n=40, seed=5)
    slightly = poor + np.random.default_rng(9).normal(0, 0.3, 40)
    difference = paired_bootstrap(gold, poor, slightly, resamples=500)
    assert difference.low < 0 < difference.high and difference.verdict == "tie"


def test_the_bootstrap_of_a_mean_resamples_each_set_on_its_own():
    gold, poor, good = scored_pairs()
    first = (gold[:200], poor[:200], good[:200])
    second = (gold[200:], poor[200:], poor[200:])  # no difference on the second set
    per_set, mean = paired_bootstrap_mean([first, second], resamples=400, seed=2)
    assert per_set[0] == paired_bootstrap(*first, resamples=400, seed=2)  # the first set draws first
    assert per_set[1].mean == 0.0 and mean.mean == pytest.approx(per_set[0].mean / 2)
    # the mean of a difference and an exact 0: the percentile interval of half the first set's resampled differences
    half = bootstrap(
        first,
        lambda g, a, b: (stats.spearmanr(b, g).statistic - stats.spearmanr(a, g).statistic) * 50,
        n_resamples=400,
        paired=True,
        vectorized=False,
        method="percentile",
        rng=np.random.default_rng(2),
    ).confidence_interval
    assert (mean.low, mean.high) == pytest.approx((half.low, half.high))
    assert mean.n == 300 and mean.verdict == "win"
    with pytest.raises(PcctuneError, match="same pairs"):
        paired_bootstrap(gold, poor[:-1], good)


def test_a_difference_round_trips_through_a_compare_record(tmp_path):
    difference = seed_difference(runs(80.0, 0.5), runs(80.1, 0.5, seed=4))
    record = CompareResult(
        a=["a"], b=["b"], mean_a={"avg": 80.0}, mean_b={"avg": 80.1}, differences={"avg": difference}
    )
    saved = json.loads(record.to_disk(tmp_path / "c.json").read_text())
    assert saved["kind"] == "compare" and saved["differences"]["avg"]["verdict"] == difference.verdict
    assert saved["differences"]["avg"]["paired"] is True
    assert load_result(tmp_path / "c.json").differences["avg"] == difference  # type: ignore[union-attr]


def write_runs(
    root,
    side: str,
    gains: dict[str, float],
    seeds=SEEDS,
    rising: tuple[int, ...] | None = None,
    protocol: str = "simcse-senteval",
) -> None:
    """A run folder per seed: before (the same for both sides) and one trained stage, each task + avg, scored under
    ``protocol``; with ``rising``, the stage's record too, best at its last dev evaluation in the seeds named there."""
    rng = np.random.default_rng(11)
    for seed in seeds:
        base = {task: 75 + float(rng.normal(0, 0.5)) for task in SEVEN_TASKS}
        noise = np.random.default_rng([seed, ord(side[0])]).normal(0, 0.05, len(base))
        after = {task: value + gains.get(task, 0.0) + e for (task, value), e in zip(base.items(), noise, strict=True)}
        stages = [] if rising is None else [stage_record(seed in rising)]
        RunResult(
            protocol=protocol,
            data_dir="d",
            seed=seed,
            config={"model": "m"},
            sts_by_stage={"before": base | {"avg": 70.0}, "pcc": after | {"avg": float(np.mean(list(after.values())))}},
            stages=stages,
        ).to_disk(root / f"{side}-seed{seed}" / "results.json")


def test_compare_names_the_runs_best_at_their_last_dev_evaluation(tmp_path, capsys):
    write_runs(tmp_path, "a", {}, rising=(2,))
    write_runs(tmp_path, "b", {}, rising=(1, 3, 4))
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*"], capsys)
    assert code == 0, printed
    result = pcctune.compare_runs(f"{tmp_path}/a-*", f"{tmp_path}/b-*")
    assert result.rising_a == [str(tmp_path / "a-seed2" / "results.json")] and len(result.rising_b) == 3
    assert "A: 1 of 5 runs best at their last dev evaluation" in printed
    assert "their dev score may still have been rising there" in printed
    assert "B: 3 of 5 runs best at their last dev evaluation" in printed
    assert "most of its runs may still have been improving where their schedule stopped" in printed
    write_runs(tmp_path / "none", "a", {}, rising=())
    code, printed = run_cli(["compare", f"{tmp_path}/none/a-*", f"{tmp_path}/b-*"], capsys)
    assert code == 0 and not [line for line in printed.splitlines() if line.startswith("A:") and "dev eval" in line]


def test_compare_prints_each_task_with_its_interval_and_verdict(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", {task: 2.0 for task in SEVEN_TASKS if task != "STS12"})  # STS12: no gain
    out = tmp_path / "comparison.json"
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*", "--output", str(out)], capsys)
    assert code == 0, printed
    rows = {line.split("│")[1].strip(): line for line in printed.splitlines() if line.startswith("│")}
    assert "tie" in rows["STS12"] and "win" in rows["STS-B"] and "5 paired seeds" in rows["avg"]
    record = CompareResult.from_disk(out)
    average = record.differences["avg"]
    assert average.mean == pytest.approx(2.0 * 6 / 7, abs=0.05) and average.verdict == "win"
    assert f"avg: {average.sentence()}" in printed and "over 5 paired seeds: a win for B" in printed
    assert record.seeds_a == record.seeds_b == list(SEEDS) and len(record.a) == 5
    assert set(record.differences) == {*SEVEN_TASKS, "avg"}
    stsb = record.differences["STSBenchmark"]
    assert stsb.low < 2.0 < stsb.high and stsb.verdict == "win"  # the last stage's scores, not "before"'s
    assert record.mean_a["avg"] == pytest.approx(75, abs=0.5)


def test_compare_without_shared_seeds_and_with_one_task(tmp_path, capsys):
    write_runs(tmp_path, "a", {}, seeds=[1, 2, 3])
    write_runs(tmp_path, "b", {"SICKRelatedness": 2.0}, seeds=[4, 5, 6])
    runs_b = ",".join(str(tmp_path / f"b-seed{seed}") for seed in (4, 5, 6))
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", runs_b, "--task", "SICKRelatedness"], capsys)
    assert code == 0, printed
    assert "3 + 3 runs" in printed and "Welch t" in printed
    sick = pcctune.compare_runs(f"{tmp_path}/a-*", runs_b, task="SICKRelatedness").differences["SICKRelatedness"]
    assert sick.mean == pytest.approx(2.0, abs=0.1) and sick.low < 2.0 < sick.high and sick.verdict == "win"
    assert f"SICKRelatedness: {sick.sentence()}" in printed and "over 3 runs of A and 3 of B (unpaired)" in printed
    result = pcctune.compare_runs([tmp_path / "a-seed1", tmp_path / "a-seed2"], runs_b, task="avg")
    assert list(result.differences) == ["avg"] and result.seeds_a == [1, 2]


def test_runs_scored_under_different_protocols_are_refused_and_the_one_protocol_is_recorded(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", {}, protocol="paper")
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*"], capsys)
    assert_one_line_error(code, printed, "scored under different STS protocols (simcse-senteval: 5 of them, e.g. ")
    assert "paper: 5 of them" in printed and "a difference would mix the protocol with the method" in printed
    with pytest.raises(PcctuneError, match="different STS protocols"):  # one run of another protocol is enough
        pcctune.compare_runs(f"{tmp_path}/a-*", [*sorted(tmp_path.glob("a-*"))[1:], tmp_path / "b-seed1"])
    with pytest.raises(PcctuneError, match="different STS protocols"):
        pcctune.compare_runs(f"{tmp_path}/a-*", [tmp_path / "a-seed1", tmp_path / "b-seed2"])  # within one side too
    write_runs(tmp_path / "same", "b", {}, protocol="paper")
    out = tmp_path / "same.json"
    code, printed = run_cli(["compare", f"{tmp_path}/b-*", f"{tmp_path}/same/b-*", "--output", str(out)], capsys)
    assert code == 0, printed
    assert CompareResult.from_disk(out).protocol == "paper" and "every score scored under the paper protocol" in printed


def test_runs_that_scored_a_task_on_other_test_pairs_are_refused_where_that_task_counts(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", {})
    full = dict.fromkeys(SEVEN_TASKS, 1000)
    for side in "ab":
        for file in sorted(tmp_path.glob(f"{side}-seed*/results.json")):
            record = RunResult.from_disk(file)
            record.pairs_by_task = full | ({"STS12": 300} if side == "b" else {})  # B scored a subsample of STS12
            record.to_disk(file)
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*"], capsys)
    assert_one_line_error(code, printed, "the runs compared scored STS12 on other test pairs (1000 pairs in ")
    assert "300 in " in printed and "a difference would mix the test sets with the method" in printed
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*", "--task", "avg"], capsys)
    assert_one_line_error(code, printed, "scored STS12 on other test pairs")  # the average holds STS12
    result = pcctune.compare_runs(f"{tmp_path}/a-*", f"{tmp_path}/b-*", task="STSBenchmark")  # the same pairs there
    assert list(result.differences) == ["STSBenchmark"]


def test_runs_whose_average_holds_other_test_sets_are_refused_where_the_average_counts(tmp_path, capsys):
    """A run that scored STS12 and a file of its own (``tasks: STS12,my_test.csv``) has an avg of those two: against
    runs of the seven, a difference of avg would be the test sets' as much as the method's."""
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", {})
    for side in "ab":
        for file in sorted(tmp_path.glob(f"{side}-seed*/results.json")):
            record = RunResult.from_disk(file)
            record.pairs_by_task = {"STS12": 1000, "my_test": 50} if side == "b" else dict.fromkeys(SEVEN_TASKS, 1000)
            record.to_disk(file)
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*"], capsys)
    assert_one_line_error(code, printed, "the runs compared average different test sets (SICKRelatedness, STS12, ")
    assert "; STS12, my_test in " in printed and "a difference of avg would mix the test sets" in printed
    result = pcctune.compare_runs(f"{tmp_path}/a-*", f"{tmp_path}/b-*", task="STS12")  # one task they share
    assert list(result.differences) == ["STS12"]


def test_compare_errors_are_one_line(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    (tmp_path / "broken.json").write_text("{not json")
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", str(tmp_path / "broken.json")], capsys)
    assert_one_line_error(code, printed, "not JSON")
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", str(tmp_path / "missing")], capsys)
    assert_one_line_error(code, printed, "no run record or run folder matches")
    only_sick = tmp_path / "sick.json"
    RunResult(protocol="p", data_dir="d", seed=1, config={}, sts_by_stage={"pcc": {"SICKRelatedness": 80.0}}).to_disk(
        only_sick
    )
    only_sts12 = tmp_path / "sts12.json"
    RunResult(protocol="p", data_dir="d", seed=1, config={}, sts_by_stage={"pcc": {"STS12": 70.0}}).to_disk(only_sts12)
    code, printed = run_cli(["compare", str(only_sick), str(only_sts12)], capsys)
    assert_one_line_error(code, printed, "share no STS task")
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/a-*,{only_sick}"], capsys)
    assert_one_line_error(code, printed, "two runs of seed 1")
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/a-*", "--task", "MR"], capsys)
    assert_one_line_error(code, printed, "no run scored 'MR': name a task every run scored (--task)")
    sick_seed9 = tmp_path / "sick9.json"
    RunResult(protocol="p", data_dir="d", seed=9, config={}, sts_by_stage={"pcc": {"SICKRelatedness": 80.0}}).to_disk(
        sick_seed9
    )
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/a-*,{sick_seed9}", "--task", "STS12"], capsys)
    assert_one_line_error(code, printed, f"{sick_seed9} scored 'STS12': name a task every run scored (--task)")
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/a-*", "--resamples", "500"], capsys)
    assert_one_line_error(code, printed, "--resamples: options of --bootstrap")


def test_bootstrap_between_two_models_on_the_test_pairs(tiny_bert, tiny_mpnet, shared_senteval, tmp_path, capsys):
    out = tmp_path / "models.json"
    args = ["compare", f"bert={tiny_bert}", str(tiny_mpnet), "--bootstrap", "--data", str(shared_senteval)]
    code, printed = run_cli([*args, "--resamples", "200", "--output", str(out)], capsys)
    assert code == 0, printed
    record = CompareResult.from_disk(out)
    assert (record.name_a, record.name_b, record.a) == ("bert", "B", [str(tiny_bert)])  # NAME=MODEL names a model
    evaluated = pcctune.evaluate(build_model(str(tiny_bert)), data=shared_senteval).sts
    assert evaluated is not None
    assert record.mean_a == pytest.approx(evaluated, abs=1e-3)  # the scores pcctune eval gives
    for task, difference in record.differences.items():
        assert difference.mean == pytest.approx(record.mean_b[task] - record.mean_a[task])
        assert difference.method == "paired bootstrap" and difference.resamples == 200
    assert record.differences["avg"].n == sum(d.n for task, d in record.differences.items() if task != "avg")
    assert "paired bootstrap" in printed and record.seed == 0


def test_a_model_against_itself_is_a_tie_and_a_run_folder_names_its_final_model(tiny_bert, shared_senteval, tmp_path):
    final = tmp_path / "run" / "pcc" / "final"
    build_model(str(tiny_bert)).save(str(final))
    stage = StageRecord(
        stage="pcc",
        loss="pearson",
        train_examples=1,
        trainable_fraction=1.0,
        final_dir=str(final),
        plot="p.png",
        wall_time_s=1.0,
    )
    stages = [{"name": "pcc", "loss": "pearson", "data": {"source": "stage2"}}]
    config = RunConfig.model_validate({"model": str(tiny_bert), "stages": stages})
    run = tmp_path / "run" / "results.json"
    RunResult(
        protocol="simcse-senteval", data_dir="d", seed=1, config=config.model_dump(mode="json"), stages=[stage]
    ).to_disk(run)
    assert run_record(tmp_path / "run") == run_record(run) == run and run_record("all-MiniLM-L6-v2") is None
    result = compare_models(tiny_bert, tmp_path / "run", shared_senteval, task="STS12", resamples=200)
    assert list(result.differences) == ["STS12"] and result.b == [str(final)]
    same = result.differences["STS12"]
    assert (same.mean, same.low, same.high, same.verdict) == (0.0, 0.0, 0.0, "tie")
    with pytest.raises(PcctuneError, match="unknown task 'MR'"):
        compare_models(tiny_bert, tiny_bert, shared_senteval, task="MR")
    with pytest.raises(PcctuneError, match="scored its models under the simcse-senteval protocol, not paper"):
        compare_models(tiny_bert, run, shared_senteval, protocol="paper")
    with pytest.raises(PcctuneError, match="is a model, not a run"):
        compare_models(tiny_bert, run, shared_senteval, variant_a="pearson")


def test_paired_columns_are_the_means_of_the_paired_seeds_and_the_other_runs_are_named(tmp_path, capsys):
    """A ran 5 seeds, B 2 of them: the difference pairs seeds 1 and 2, so A's and B's columns are the means over
    those two (A's other seeds score 5 points higher: over all five, the columns would say B − A ≈ −3)."""
    write_runs(tmp_path, "a", {}, seeds=[1, 2])
    write_runs(tmp_path, "a", {task: 5.0 for task in SEVEN_TASKS}, seeds=[3, 4, 5])
    write_runs(tmp_path, "b", {task: 1.0 for task in SEVEN_TASKS}, seeds=[1, 2])
    out = tmp_path / "comparison.json"
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*", "--output", str(out)], capsys)
    assert code == 0, printed
    for line in printed.splitlines():
        if line.startswith("│") and "paired seeds" in line:
            a, b, difference = (float(cell) for cell in line.split("│")[2:5])
            assert abs((b - a) - difference) <= 0.01 + 1e-9, line  # each printed to 2 decimals
    rows = {line.split("│")[1].strip(): line for line in printed.splitlines() if line.startswith("│")}
    assert "2 paired seeds" in rows["avg"]
    left = [str(tmp_path / f"a-seed{seed}" / "results.json") for seed in (3, 4, 5)]
    [line] = [line for line in printed.splitlines() if line.startswith("left out:")]
    assert line.startswith("left out: 3 runs whose seed the other side did not run") and all(f in line for f in left)
    assert line.endswith("A, B and B − A are over the 2 seeds both sides ran")
    record = CompareResult.from_disk(out)
    assert record.left_out == left and record.seeds_a == list(SEEDS) and len(record.a) == 5
    assert record.differences["avg"].mean == pytest.approx(1.0, abs=0.1)
    for task, difference in record.differences.items():
        assert record.mean_b[task] - record.mean_a[task] == pytest.approx(difference.mean)
    unpaired = pcctune.compare_runs(f"{tmp_path}/a-*", f"{tmp_path}/b-seed1")  # one shared seed: Welch, all runs
    assert unpaired.left_out == [] and unpaired.differences["avg"].method is None
    assert unpaired.mean_b["avg"] - unpaired.mean_a["avg"] == pytest.approx(unpaired.differences["avg"].mean)


def write_variant_runs(root, gains: dict[str, float]) -> None:
    """Runs trained with ``--compare``: one final stage ``pcc`` per loss (its label ``pcc-LOSS``), after a first
    stage ``warm`` that was scored too."""
    stage = {"name": "pcc", "loss": "pearson"}
    config = {"model": "m", "stages": [{"name": "warm", "loss": "pearson"}, stage]}
    for seed in SEEDS:
        noise = float(np.random.default_rng(seed).normal(0, 0.5))
        scores = {loss: {"STSBenchmark": 80 + gain + noise, "avg": 75 + gain + noise} for loss, gain in gains.items()}
        records = [
            StageRecord(
                stage=f"pcc-{loss}",
                loss=loss,
                train_examples=1,
                trainable_fraction=1.0,
                final_dir=str(root / f"seed{seed}" / f"stage2-pcc-{loss}" / "final"),
                plot="p.png",
                wall_time_s=1.0,
            )
            for loss in gains
        ]
        RunResult(
            protocol="simcse-senteval",
            data_dir="d",
            seed=seed,
            config=config,
            stages=records,
            sts_by_stage={"warm": {"STSBenchmark": 90.0, "avg": 90.0}}
            | {f"pcc-{loss}": values for loss, values in scores.items()},
        ).to_disk(root / f"seed{seed}" / "results.json")


def test_a_run_with_final_stage_variants_is_compared_through_the_one_named(tmp_path, capsys):
    write_variant_runs(tmp_path, {"pearson": 1.0, "infonce_positives": 0.0})
    runs = f"{tmp_path}/seed*"
    code, printed = run_cli(["compare", runs, runs], capsys)
    assert_one_line_error(code, printed, "final-stage variants (pcc-pearson, pcc-infonce_positives); name the one")
    code, printed = run_cli(["compare", runs, runs, "--variant", "cosent"], capsys)
    assert_one_line_error(code, printed, "no final-stage variant 'cosent'; its variants: pcc-pearson, pcc-infonce")
    out = tmp_path / "c.json"
    args = ["compare", runs, runs, "--variant-a", "infonce_positives", "--variant-b", "pcc-pearson", "--output"]
    code, printed = run_cli([*args, str(out)], capsys)
    assert code == 0, printed
    assert "A (variant infonce_positives): 5 runs" in printed and "B (variant pcc-pearson): 5 runs" in printed
    record = CompareResult.from_disk(out)
    assert record.differences["avg"].mean == pytest.approx(1.0) and record.mean_a["STSBenchmark"] < 85  # not warm
    assert (record.variant_a, record.variant_b) == ("infonce_positives", "pcc-pearson")
    same = pcctune.compare_runs(runs, runs, variant_a="pearson", variant_b="pearson").differences["avg"]
    assert (same.mean, same.verdict) == (0.0, "tie")


def test_nan_is_refused_not_called_a_tie(tiny_bert, shared_senteval, tmp_path, capsys):
    with pytest.raises(PcctuneError, match="A: the score of seed 2 is nan; a comparison needs finite numbers"):
        seed_difference({1: 80.0, 2: float("nan")}, {1: 81.0, 2: 82.0})
    with pytest.raises(PcctuneError, match="B: the score of seed 1 is inf"):
        seed_difference({1: 80.0}, {1: float("inf")})
    gold, poor, good = scored_pairs(n=20)
    poor[4] = np.nan
    with pytest.raises(PcctuneError, match="A's predictions: 1 of 20 values are not finite numbers"):
        paired_bootstrap(gold, poor, good, resamples=100)
    with pytest.raises(PcctuneError, match="B's predictions are all 0.5: they have no correlation"):
        paired_bootstrap(gold, good, np.full(20, 0.5), resamples=100)
    broken = build_model(str(tiny_bert))  # a model whose training diverged: its embeddings are NaN
    next(p for p in broken.parameters() if p.ndim == 2).data.fill_(float("nan"))
    broken.save(str(tmp_path / "diverged"))
    args = ["compare", str(tiny_bert), str(tmp_path / "diverged"), "--bootstrap", "--data", str(shared_senteval)]
    code, printed = run_cli([*args, "--task", "STS12", "--resamples", "100"], capsys)
    [error] = [line for line in printed.splitlines() if line.startswith("error:")]  # after the encoding's progress
    assert code == 2 and "Traceback" not in printed
    assert error.startswith(f"error: B ({tmp_path / 'diverged'}): its cosines on STS12: 7 of 7 values are not finite")


def test_difference_is_in_the_api():
    assert pcctune.Difference is Difference and pcctune.seed_difference is seed_difference


def test_every_corrected_interval_of_a_family_is_no_narrower_than_bonferronis_simultaneous_interval():
    """Each interval ``holm_differences`` gives beside the uncorrected one covers at least Bonferroni's paired t
    interval at 1 − α/m over the planned family (m = 8, four run so far): the k-th of several rejected comparisons
    gets no narrower interval than the first, and the interval is named by its method, level and family."""
    a = runs(80.0, 0.5)
    family = {f"gain {gain}": (a, plus(a, gain, 0.3, seed=k)) for k, gain in enumerate((3.0, 2.0, 1.2, 0.1))}
    found = pcctune.holm_differences(family, family_size=8)
    assert sum(result.holm.rejected for result in found.values()) >= 3  # several decided at Holm's later steps
    for name, result in found.items():
        b = family[name][1]
        low, high = stats.ttest_rel([b[s] for s in SEEDS], [a[s] for s in SEEDS]).confidence_interval(1 - 0.05 / 8)
        corrected = [value for key, value in vars(result).items() if isinstance(value, Difference) and key != "plain"]
        assert corrected, "a corrected interval beside the uncorrected one"
        for interval in corrected:
            assert interval.low <= low + 1e-9 and interval.high >= high - 1e-9, (name, interval, (low, high))
    assert {result.method for result in found.values()} == {"Bonferroni 99.375 % simultaneous, family of 8"}
    assert found["gain 0.1"].simultaneous.low < 0 < found["gain 0.1"].simultaneous.high
