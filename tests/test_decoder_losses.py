"""The decoder's stage-2 loss comparison (``reproductions/decoder_losses``) on a tiny random decoder: stage 1 built
once, each loss searched on dev at a seed no test run uses, each winner over the test seeds, every run kept as a
record that a second run does not train again, and the table and verdict drawn from the records."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reproductions.decoder_losses import decoder_losses as grid
from reproductions.decoder_losses import design, kept_stage1, search, tables

from pcctune.cpu_kind import CPUKind
from pcctune.modeling.build import resolve_source
from pcctune.results import BenchmarkResult, RunResult

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> Path:
    """The whole chain once, as ``python -m reproductions decoder_losses --quick`` runs it."""
    out = tmp_path_factory.mktemp("decoder_losses")
    command = [sys.executable, "-m", "reproductions", "decoder_losses", "--quick", "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "decoder_losses"


def _args(out: Path) -> argparse.Namespace:
    recipe = ROOT / "configs" / "paper_recipe_smollm2_cpu.yaml"
    return argparse.Namespace(output=out, runs=out / "runs", recipe=recipe, model="unused", data=None, quick=True)


def test_stage_two_continues_stage_one_and_searches_at_a_seed_no_test_run_uses(quick):
    records = quick / "records"
    stage1 = RunResult.from_disk(records / "stage1.json")
    assert stage1.seed == design.STAGE1_SEED and stage1.config["stages"][0]["dev"] == "none"
    assert list(stage1.sts_by_stage) == ["contrastive-nli"]  # scored on the test sets, not before training
    speed = design.speed_settings()
    assert {key: stage1.config[key] for key in speed} == speed
    model = str(quick / "runs" / "stage1" / "stage1-contrastive-nli" / "final")
    recipe_rate = 5.0e-4
    search = [RunResult.from_disk(path) for path in sorted((records / "search").glob("*.json"))]
    plan = design.search_plan(_args(quick))
    # --quick: Pearson and cosine-MSE at the recipe's rate and half of it (one step), then their schedule's growth
    first = [(recipe_rate, 1), (recipe_rate / 2, 1)]
    assert all(points[:2] == first and len(points) > 2 for points in plan.values())
    assert len(search) == sum(len(points) for points in plan.values())  # every planned run ran, no other
    assert design.SEARCH_SEED not in design.TEST_SEEDS
    for run in search:
        stage = run.config["stages"][0]
        assert run.seed == design.SEARCH_SEED and run.sts_by_stage == {}  # no test set read while searching
        assert run.config["model"] == model and stage["data"]["leakage"] == "pair"
        assert {key: run.config[key] for key in speed} == speed  # every loss alike on one machine, stage 1 too
        assert (stage["learning_rate"], stage["max_steps"]) in plan[stage["loss"]]
        assert run.stages[0].best_dev_spearman is not None
    for loss, points in plan.items():
        tried = {
            (r.config["stages"][0]["learning_rate"], r.config["stages"][0]["max_steps"]): r.stages[0].best_dev_spearman
            for r in search
            if r.stages[0].loss == loss
        }
        best = next(point for point in points if tried[point] == max(tried.values()))  # the earliest on a tie
        for seed in (1, 2):
            run = RunResult.from_disk(records / f"{loss}-seed{seed}.json")
            stage = run.config["stages"][0]
            assert run.seed == seed and (stage["learning_rate"], stage["max_steps"]) == best
            assert set(run.sts_by_stage) == {loss} and run.versions["device"]


ZEN5 = CPUKind("AuthenticAMD", 26, 2, "AMD EPYC", frozenset({"avx2", "avx512f", "avx512_bf16"}))
AVX2_EPYC = CPUKind("AuthenticAMD", 25, 1, "AMD EPYC", frozenset({"avx2", "fma"}))
UNKNOWN = CPUKind("unknown", None, None, "unknown", frozenset())


def test_float32_lora_layers_go_through_onednn_only_on_the_kind_where_that_measured_faster():
    assert design.speed_settings(ZEN5) == {"dropout_sampler": "gaps", "onednn": "on"}
    assert design.speed_settings(AVX2_EPYC) == {"dropout_sampler": "gaps", "onednn": "auto"}  # measured slower
    assert design.speed_settings(UNKNOWN) == {"dropout_sampler": "gaps", "onednn": "auto"}  # the library's default


def test_the_table_and_verdict_come_from_the_records(quick):
    record = BenchmarkResult.from_disk(quick / "runs.json")
    labels = [row.label for row in record.rows]
    assert labels[0] == "stage1" and {
        f"{loss}-seed{seed}" for loss in ("pearson", "cosine_mse") for seed in (1, 2)
    } <= set(labels)
    assert {"contrastive-seed1", "contrastive-seed2", "contrastive-seed3"} <= set(labels)  # decoder_full's records
    table = (quick / "table.md").read_text()
    searched = len(list((quick / "records" / "search").glob("*.json")))
    assert f"| stage 1 | 1 | 1 |\n| search runs | {searched} | {searched} |\n| test runs | 4 | 4 |" in table
    scores = table.split("Search")[0]
    assert scores.count("not run yet") == 1 and "| stage 1 + CoSENT | not run yet |" in scores  # not in --quick
    verdict = table[table.index("\n**") + 1 :]
    assert verdict.startswith("**not decided yet**") and "- Pearson − cosine-MSE = " in verdict
    assert "over 2 paired seeds" in verdict and (quick / "decoder_losses.png").stat().st_size > 0
    empty = {"search": [], "rates": [5e-4], "first_steps": 84, "search_seed": 101}
    assert tables.table([], empty).count("not run yet") >= 4


def test_a_second_run_plans_nothing_and_a_lost_stage_one_is_built_again_only_when_runs_remain(quick, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(quick / "records", out / "records")
    args = _args(out)
    assert list(grid.ready_jobs(args)) == []  # every run has its record: no stage 1 needed either
    (out / "records" / "cosine_mse-seed2.json").unlink()
    [(name, *_)] = grid.ready_jobs(args)
    assert name == "stage1"  # a run remains and this machine lacks stage 1's model
    args.runs = quick / "runs"  # where stage 1 was built
    assert [job[0] for job in grid.ready_jobs(args)] == ["cosine_mse-seed2"]


def test_a_stage_one_built_here_that_scores_unlike_the_first_build_stops_every_start(quick, tmp_path):
    """A failed rebuild check is read again at every start: its model stays on disk, and no stage-2 run may
    continue it."""
    out = tmp_path / "copy"
    shutil.copytree(quick / "records", out / "records")
    shutil.copytree(quick / "runs" / "stage1", out / "runs" / "stage1")
    (out / "records" / "cosine_mse-seed2.json").unlink()
    args = _args(out)
    assert [job[0] for job in grid.ready_jobs(args)] == ["cosine_mse-seed2"]  # the first build itself: alike
    built = out / "runs" / "stage1" / "results.json"
    result = RunResult.from_disk(built)
    moved = {stage: scores | {"avg": scores["avg"] + 1.0} for stage, scores in result.sts_by_stage.items()}
    result.model_copy(update={"sts_by_stage": moved}).to_disk(built)
    for _ in range(2):
        with pytest.raises(SystemExit, match="stage 1 built here .* the stage-2 runs would continue another model"):
            list(grid.ready_jobs(args))


def test_the_verdict_waits_for_every_test_run():
    pearson, below = _rows("pearson", [80.0, 80.2, 80.1]), _rows("cosine_mse", [79.0, 79.1, 79.3])
    cosent = _rows("cosent", [78.0, 78.4, 78.1])
    assert tables.verdict([*pearson, *below, *cosent])[0].startswith("**held**")
    waiting = tables.verdict([*pearson, *below, *cosent], complete=False)
    assert (
        waiting[0].startswith("**not decided yet**: not every test run") and "- Pearson − cosine-MSE = " in waiting[1]
    )


def _rows(kind: str, averages: list[float]) -> list[dict]:
    return [
        {"kind": kind, "seed": seed, "sts": {"avg": avg}, "stage1_avg": 70.0} for seed, avg in enumerate(averages, 1)
    ]


def test_the_verdict_is_held_only_where_pearson_beats_both_and_a_tie_where_the_interval_holds_0():
    pearson = _rows("pearson", [75.0, 75.5, 76.0])
    cosine_below, cosent_below = _rows("cosine_mse", [74.0, 74.4, 75.1]), _rows("cosent", [73.0, 73.6, 73.9])
    held = tables.verdict([*pearson, *cosine_below, *cosent_below])
    assert held[0].startswith("**held**") and any(
        line.startswith("- stage 1 + Pearson (Pcc) − its stage 1 = +5.50 [") for line in held
    )
    tied = _rows("cosine_mse", [75.5, 75.0, 76.2])  # Pearson − it: −0.5, +0.5, −0.2
    not_held = tables.verdict([*pearson, *tied, *cosent_below])
    assert not_held[0] == "**not held**: Pearson's stage 2 does not beat both: a tie with cosine-MSE."
    assert not_held[1].startswith("- Pearson − cosine-MSE = -0.07 [") and not_held[1].endswith(": a tie")
    cosent_above = _rows("cosent", [76.0, 76.4, 77.1])
    assert tables.verdict([*pearson, *cosine_below, *cosent_above])[0].endswith(": CoSENT above it.")
    assert tables.verdict([*pearson, *cosine_below])[0].startswith("**not decided yet**")
    assert tables.verdict([])[0].startswith("**not run yet**")


def test_stage_one_under_the_speed_settings_is_read_against_decoder_fulls_build_before_them():
    before = {"label": "stage1_before_speed", "sts": {"avg": 74.0572}}
    assert tables.speed_check([{"label": "stage1", "sts": {"avg": 74.09}}, before]) == [
        "- stage 1 built under the speed settings: 74.09 against 74.06 for decoder_full's build before them, +0.03: "
        "within the 0.05 this claim allows"
    ]
    assert tables.speed_check([{"label": "stage1", "sts": {"avg": 73.98}}, before])[0].endswith(
        "-0.08: outside the 0.05 this claim allows"
    )
    assert tables.speed_check([before]) == []


def test_the_test_seeds_run_one_seed_at_a_time_every_loss_of_a_seed_in_turn(quick, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(quick / "records", out / "records")
    for path in (out / "records").glob("*-seed*.json"):
        path.unlink()  # the search stays: every loss has its winner
    args = _args(out)
    args.runs = quick / "runs"
    planned = [job[0] for job in grid.ready_jobs(args)]
    assert planned == ["pearson-seed1", "cosine_mse-seed1", "pearson-seed2", "cosine_mse-seed2"]


def test_the_front_page_phrase_counts_the_records_then_reads_the_verdict(quick, tmp_path):
    args = _args(quick)
    complete = tables.front_page_phrase(args)  # --quick: every planned run has its record
    assert complete.startswith("against cosine-MSE and CoSENT (`reproductions/decoder_losses`, 2 seeds): **")
    assert "Pearson − cosine-MSE = " in complete
    out = tmp_path / "copy"
    shutil.copytree(quick / "records", out / "records")
    (out / "records" / "cosine_mse-seed2.json").unlink()
    planned = 1 + len(list((out / "records" / "search").glob("*.json"))) + 4
    assert f"runs are **under way**, no verdict yet (`reproductions/decoder_losses`: {planned - 1} of {planned} " in (
        tables.front_page_phrase(_args(out))
    )
    readme = tmp_path / "README.md"
    readme.write_text("Pearson beats X; against cosine-MSE and CoSENT it has\nold words. Every claim, each number.\n")
    tables.write_front_page(readme, "against cosine-MSE and CoSENT new words")
    assert readme.read_text() == "Pearson beats X; against cosine-MSE and CoSENT new words. Every claim, each number.\n"


def test_a_record_shows_its_cpu_with_vendor_family_and_model_and_no_flags(quick):
    record = RunResult.from_disk(quick / "records" / "pearson-seed1.json")
    device = "cpu: AuthenticAMD family 26 model 2 (AMD EPYC); flags: avx2 avx512f"
    moved = record.model_copy(update={"versions": record.versions | {"device": device}})
    assert tables.device_of(moved) == "CPU: AuthenticAMD family 26 model 2 (AMD EPYC)"


def test_pearson_against_the_contrastive_stage_2_is_unpaired_as_they_continue_other_builds_of_stage_1():
    """The stage-2 losses of one seed continue this claim's stage 1 and pair by seed; the contrastive stage 2
    continues decoder_full's build, so its seed k shares no model with Pearson's seed k."""
    pearson = [{"seed": seed, "sts": {"avg": 80.0 + seed / 10}} for seed in (1, 2, 3)]
    other = [{"seed": seed, "sts": {"avg": 79.0 + seed / 7}} for seed in (1, 2, 3)]
    assert tables.pearson_minus(pearson, other, "cosent").method == "paired t"
    unpaired = tables.pearson_minus(pearson, other, tables.CONTRASTIVE)
    assert unpaired.method == "Welch t" and (unpaired.n_a, unpaired.n_b) == (3, 3)
    assert "(unpaired)" in unpaired.sentence("the contrastive stage 2", "Pearson")


def test_every_stage_2_record_names_the_stage_1_build_it_continued_and_another_build_is_refused(quick, tmp_path):
    """Each stage-2 record keeps the sha256 of the stage-1 model it continued; a run whose search or seed holds a
    record of another build (a stage 1 built again elsewhere, scoring alike) is refused before it trains."""
    args = _args(quick)
    build = design.stage1_digest(args)
    stage2 = [*(quick / "records" / "search").glob("*.json"), *(quick / "records").glob("*-seed*.json")]
    assert stage2 and {design.build_of(RunResult.from_disk(path)) for path in stage2} == {build}
    out = tmp_path / "copy"
    shutil.copytree(quick / "records", out / "records")
    (out / "records" / "cosine_mse-seed2.json").unlink()
    copied = _args(out)
    copied.runs = args.runs  # this machine's stage 1: the same build
    design.check_one_build(copied, design.test_record(copied, "cosine_mse", 2), build)
    with pytest.raises(SystemExit, match="but pearson-seed2.json continued"):
        design.check_one_build(copied, design.test_record(copied, "cosine_mse", 2), "another" + build)
    design.check_one_build(copied, design.test_record(copied, "cosine_mse", 3), "another" + build)  # no seed-3 record


def test_a_machine_without_stage_one_continues_the_kept_first_build_not_a_rebuild(quick, tmp_path):
    """The first build's model is kept beside the records: a machine whose run folders lack stage 1 lays it there,
    on its own copy of the base, and its stage-2 runs continue the build the other records name."""
    kept = quick / "stage1"
    assert (kept / "model" / "adapter_model.safetensors").is_file() and not (kept / "model" / "README.md").exists()
    out = tmp_path / "copy"
    shutil.copytree(quick / "records", out / "records")
    shutil.copytree(kept, out / "stage1")
    (out / "records" / "cosine_mse-seed2.json").unlink()
    stale = out / "runs" / "stage1" / "results.json"  # a build here whose model was lost: not stage 1 any more
    stale.parent.mkdir(parents=True)
    shutil.copyfile(out / "records" / "pearson-seed1.json", stale)
    args = _args(out)
    assert [job[0] for job in grid.ready_jobs(args)] == ["cosine_mse-seed2"]  # no stage 1 to train
    build = RunResult.from_disk(out / "records" / "cosine_mse-seed1.json").versions[design.BUILD_KEY]
    assert design.stage1_digest(args) == build  # the same bytes: the same build
    laid = kept_stage1.base_of(design.stage1_model(args))
    wanted = json.loads((kept / kept_stage1.BASE_FILE).read_text())
    assert laid == Path(resolve_source(wanted["model"]).path)
    assert RunResult.from_disk(out / "runs" / "stage1" / "results.json") == RunResult.from_disk(
        out / "records" / "stage1.json"
    )


def test_the_kept_stage_one_is_refused_on_other_base_weights(quick, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(quick / "records", out / "records")
    shutil.copytree(quick / "stage1", out / "stage1")
    (out / "records" / "cosine_mse-seed2.json").unlink()
    base = out / "stage1" / kept_stage1.BASE_FILE
    base.write_text(json.dumps(json.loads(base.read_text()) | {"weights_sha256": "0" * 64}))
    with pytest.raises(SystemExit, match="was trained on other weights of"):
        list(grid.ready_jobs(_args(out)))
    assert not (out / "runs" / "stage1").exists()


class _Stage:
    def __init__(self, dev: float, at_last: bool) -> None:
        self.best_dev_spearman, self.best_at_last_evaluation = dev, at_last


class _Run:
    """What the search reads of a record: its stage's best dev score and whether it came at the last evaluation."""

    def __init__(self, dev: float, at_last: bool = True) -> None:
        self.stages = [_Stage(dev, at_last)]


def _plan(found: dict[tuple[str, search.Point], _Run]) -> dict[str, list[search.Point]]:
    return search.plan(("a", "b"), [(1.0, 10), (2.0, 10)], lambda loss, point: found.get((loss, point)))


def test_the_schedule_grows_from_each_losss_first_winner_only_once_every_first_point_has_its_record():
    first = [(1.0, 10), (2.0, 10)]
    assert _plan({}) == {"a": first, "b": first}
    found = {("a", (1.0, 10)): _Run(0.80), ("a", (2.0, 10)): _Run(0.81), ("b", (1.0, 10)): _Run(0.70)}
    assert _plan(found) == {"a": first, "b": first}  # b's second point has no record yet
    found[("b", (2.0, 10))] = _Run(0.70)  # a tie: the earlier point leads
    assert _plan(found) == {"a": [*first, (2.0, 20)], "b": [*first, (1.0, 20)]}
    finished = {key: _Run(run.stages[0].best_dev_spearman, at_last=False) for key, run in found.items()}
    assert _plan(finished) == {"a": first, "b": first}  # every leader peaked before its last evaluation: no growth


def test_the_second_round_runs_only_where_a_loss_leads_at_twice_its_steps_at_its_last_evaluation():
    first = [(1.0, 10), (2.0, 10)]
    found = {(loss, point): _Run(0.80 if point == (2.0, 10) else 0.70) for loss in "ab" for point in first}
    found[("a", (2.0, 20))] = _Run(0.85, at_last=False)  # leads, but its best came before its last evaluation
    found[("b", (2.0, 20))] = _Run(0.75)  # at its last evaluation, but does not lead
    assert _plan(found) == {loss: [*first, (2.0, 20)] for loss in "ab"}  # the search is whole
    found[("b", (2.0, 20))] = _Run(0.90)  # b leads at 2× at its last evaluation: every loss grows on
    grown = [*first, (2.0, 20), (2.0, 40), (1.0, 40)]
    assert _plan(found) == {"a": grown, "b": grown}
    found |= {("a", (2.0, 40)): _Run(0.95), ("a", (1.0, 40)): _Run(0.50)}  # a's 4× leads: it grows to 8×
    found |= {("b", (2.0, 40)): _Run(0.50), ("b", (1.0, 40)): _Run(0.99)}  # b's 4× at half the rate leads: 8× too
    assert _plan(found) == {"a": [*grown, (2.0, 80)], "b": [*grown, (1.0, 80)]}
    found |= {("a", (2.0, 80)): _Run(0.90), ("b", (1.0, 80)): _Run(0.90)}
    assert _plan(found) == {"a": [*grown, (2.0, 80)], "b": [*grown, (1.0, 80)]}  # 8× is the limit: nothing more
    assert search.leader("b", _plan(found)["b"], lambda loss, point: found[(loss, point)]) == (1.0, 40)
