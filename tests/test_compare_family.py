"""``pcctune compare A B1 B2 …``: several Bs read as one family against A, Holm's decisions with Bonferroni's
simultaneous intervals beside them; a win with its size, a win by its sign only, or a tie, and the planned size of a
family read early."""

from __future__ import annotations

import pytest
from scipy import stats

from pcctune.data.tasks import SEVEN_TASKS
from pcctune.evaluation.compare import seed_difference
from pcctune.evaluation.multiple import Corrected, HolmStep
from pcctune.results import CompareResult, FamilyResult, RunResult
from tests.conftest import assert_one_line_error, run_cli
from tests.test_compare import SEEDS, write_runs


def averages(root, side: str) -> dict[int, float]:
    """Each seed's seven-task average, as the runs of ``side`` recorded it."""
    files = sorted(root.glob(f"{side}-seed*/results.json"))
    return {record.seed: record.sts_by_stage["pcc"]["avg"] for record in map(RunResult.from_disk, files)}


def test_several_bs_are_read_as_one_family_with_holm_and_bonferroni(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", dict.fromkeys(SEVEN_TASKS, 2.0))  # a clear gain
    write_runs(tmp_path, "c", {})  # none
    sides = [f"{tmp_path}/{side}-*" for side in "abc"]
    out, plot = tmp_path / "family.json", tmp_path / "family.png"
    code, printed = run_cli(["compare", *sides, "--output", str(out), "--plot", str(plot)], capsys)
    assert code == 0, printed
    assert plot.stat().st_size > 1000 and f"plot -> {plot}" in printed
    record = FamilyResult.from_disk(out)
    assert record.task == "avg" and record.family_size == 2 and list(record.comparisons) == sides[1:]
    assert record.method == "Bonferroni 97.5 % simultaneous, family of 2"
    a = averages(tmp_path, "a")
    for side, name in zip("bc", sides[1:], strict=True):
        found, b = record.comparisons[name], averages(tmp_path, side)
        test = stats.ttest_rel([b[s] for s in SEEDS], [a[s] for s in SEEDS])
        wide = test.confidence_interval(1 - 0.05 / 2)
        assert found.p == pytest.approx(test.pvalue) and found.seeds == list(SEEDS)
        assert (found.simultaneous.low, found.simultaneous.high) == pytest.approx((wide.low, wide.high))
        assert found.simultaneous.low < found.plain.low and found.plain.high < found.simultaneous.high
    gain, none = record.comparisons[sides[1]], record.comparisons[sides[2]]
    smaller, larger = sorted([gain.p, none.p])
    assert gain.holm_p == pytest.approx(min(1, 2 * smaller)) and none.holm_p == pytest.approx(max(2 * smaller, larger))
    assert gain.holm_rejects and gain.decision == (
        f"{sides[1]} wins by Holm's decision, the simultaneous interval excluding 0"
    )
    assert not none.holm_rejects and none.decision.startswith("a tie (the simultaneous interval holds 0")
    assert "Bonferroni 97.5 % simultaneous" in printed and f"{sides[1]} − A: {gain.decision}" in printed


def test_a_family_read_early_is_corrected_for_its_planned_size(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", dict.fromkeys(SEVEN_TASKS, 0.05))
    out = tmp_path / "early.json"
    args = ["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*", "--family-size", "8", "--task", "STSBenchmark"]
    code, printed = run_cli([*args, "--output", str(out)], capsys)
    assert code == 0, printed
    found = FamilyResult.from_disk(out).comparisons[f"{tmp_path}/b-*"]
    assert FamilyResult.from_disk(out).method == "Bonferroni 99.375 % simultaneous, family of 8"
    assert found.holm_p == pytest.approx(min(1.0, 8 * found.p))  # the seven not run yet stand in as untested


def test_a_win_holm_calls_whose_simultaneous_interval_holds_zero_keeps_only_its_sign():
    a = {1: 80.0, 2: 80.2, 3: 79.9}
    b = {1: 80.5, 2: 80.8, 3: 80.6}
    plain, wide = seed_difference(a, b), seed_difference(a, b, confidence=0.999)
    assert plain.verdict == "win" and wide.verdict == "tie"
    signed = Corrected(plain, HolmStep(0.01, 0.02, True), wide, 5)
    assert signed.decision("cosent", "Pearson") == (
        "Pearson wins by Holm's decision, its sign only (the simultaneous interval holds 0)"
    )
    lost = Corrected(seed_difference(b, a), HolmStep(0.01, 0.02, True), seed_difference(b, a, confidence=0.9), 5)
    assert lost.decision("cosent", "Pearson").startswith("cosent wins by Holm's decision")


@pytest.mark.parametrize(
    ("extra", "pattern"),
    [
        (["--bootstrap"], "--bootstrap: options of --bootstrap (two models); several Bs are runs over seeds"),
        (["--resamples", "200"], "--resamples: options of --bootstrap"),
        (["--task", "STS99"], "no run scored 'STS99': name a task every run scored (--task)"),
        (["--family-size", "1"], "a family of 1 planned comparisons cannot hold 2 p-values"),
    ],
)
def test_a_family_refuses_what_it_cannot_read_in_one_line(tmp_path, capsys, extra, pattern):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", {})
    write_runs(tmp_path, "c", {})
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*", f"{tmp_path}/c-*", *extra], capsys)
    assert_one_line_error(code, printed, pattern)


def test_a_family_needs_paired_seeds_and_each_b_once(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", {}, seeds=range(11, 14))
    a, b = f"{tmp_path}/a-*", f"{tmp_path}/b-*"
    code, printed = run_cli(["compare", a, b, a], capsys)
    assert_one_line_error(code, printed, f"{b}: a family is read over paired seeds, and A and {b} share 0")
    code, printed = run_cli(["compare", a, a, a], capsys)
    assert_one_line_error(code, printed, "a family names each side once")
    code, printed = run_cli(["compare", f"x={a}", f"x={b}", b], capsys)
    assert_one_line_error(code, printed, "a family names each side once")


def test_a_family_names_the_one_protocol_its_runs_were_scored_under_and_refuses_two(tmp_path, capsys):
    write_runs(tmp_path, "a", {}, protocol="paper")
    write_runs(tmp_path, "b", {}, protocol="paper")
    write_runs(tmp_path, "c", {})
    out = tmp_path / "family.json"
    family = ["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*", "--family-size", "2", "--output", str(out)]
    code, printed = run_cli(family, capsys)
    assert code == 0, printed
    assert FamilyResult.from_disk(out).protocol == "paper" and "every score scored under the paper protocol" in printed
    code, printed = run_cli(["compare", f"{tmp_path}/a-*", f"{tmp_path}/b-*", f"{tmp_path}/c-*"], capsys)
    assert_one_line_error(code, printed, "different STS protocols (paper: 10 of them, e.g. ")


def test_named_sides_speak_in_the_table_the_decisions_and_the_record(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", dict.fromkeys(SEVEN_TASKS, 2.0))
    write_runs(tmp_path, "c", {})
    out = tmp_path / "named.json"
    sides = [f"pearson={tmp_path}/a-*", f"cosent={tmp_path}/b-*", f"{tmp_path}/c-*"]
    code, printed = run_cli(["compare", *sides, "--output", str(out)], capsys)
    assert code == 0, printed
    record = FamilyResult.from_disk(out)
    assert record.name_a == "pearson" and list(record.comparisons) == ["cosent", f"{tmp_path}/c-*"]
    assert (
        record.comparisons["cosent"].decision == "cosent wins by Holm's decision, the simultaneous interval excluding 0"
    )
    assert f"cosent − pearson: {record.comparisons['cosent'].decision}" in printed
    assert "B − pearson on avg" in printed and printed.splitlines()[0].startswith(
        "pearson: 5 runs (seeds 1, 2, 3, 4, 5)"
    )


def test_the_family_plot_draws_each_comparison_with_both_intervals_first_on_top(tmp_path, monkeypatch):
    import pcctune.evaluation.report as report

    drawn = {}
    saved = report.save_figure
    monkeypatch.setattr(report, "save_figure", lambda figure, path: drawn.update(figure=figure) or saved(figure, path))
    a = {1: 80.0, 2: 80.2, 3: 79.9}
    win, tie = {1: 81.0, 2: 81.3, 3: 80.8}, {1: 80.1, 2: 80.0, 3: 80.0}
    family = {name: (seed_difference(a, b), seed_difference(a, b, 0.99)) for name, b in (("win", win), ("tie", tie))}
    path = report.family_plot(family, tmp_path / "f.png", "t", "x")
    assert path.stat().st_size > 1000
    (ax,) = drawn["figure"].axes
    assert [label.get_text() for label in ax.get_yticklabels()] == ["tie", "win"]  # bottom to top: the first on top
    thick = [line for line in ax.get_lines() if line.get_linewidth() == 4]
    assert [tuple(line.get_xdata()) for line in thick] == [
        pytest.approx((found.low, found.high)) for found, _ in reversed(family.values())
    ]
    segments = [c.get_segments()[0] for c in ax.collections]  # the thin lines: the simultaneous intervals
    assert [(s[0][0], s[1][0]) for s in segments] == [
        pytest.approx((joint.low, joint.high)) for _, joint in reversed(family.values())
    ]


def test_two_named_sides_speak_by_their_names(tmp_path, capsys):
    write_runs(tmp_path, "a", {})
    write_runs(tmp_path, "b", dict.fromkeys(SEVEN_TASKS, 2.0), seeds=range(1, 7))
    out = tmp_path / "two.json"
    code, printed = run_cli(["compare", f"mse={tmp_path}/a-*", f"pcc={tmp_path}/b-*", "--output", str(out)], capsys)
    assert code == 0, printed
    record = CompareResult.from_disk(out)
    assert (record.name_a, record.name_b) == ("mse", "pcc") and len(record.a) == 5
    assert printed.startswith("mse: 5 runs") and "pcc − mse, Spearman × 100" in printed
    assert "mse, pcc and pcc − mse are over the 5 seeds both sides ran" in printed
    assert f"avg: {record.differences['avg'].sentence('mse', 'pcc')}" in printed and "a win for pcc" in printed
