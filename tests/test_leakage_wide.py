"""The leakage grid's wide search (``reproductions/leakage/wide.py``): the same eight settings for every loss, search
seeds apart from test seeds, each level's dev data filtered at that level, the control split as ``sentence`` is,
Holm's correction, and a resumed runner that plans only what is missing."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest
from reproductions.leakage import comparisons, report, transfer_jobs, wide, wide_tables
from reproductions.leakage.cells import HERE, LOSSES, MINILM, PAIR, SENTENCE, TASKS, Cell
from reproductions.leakage.design import BATCH_SIZES, DESIGN, EPOCHS, LEARNING_RATES, WARMUP, design

from pcctune.errors import PcctuneError
from pcctune.results import RunResult, TransferScore

REAL = HERE / "records" / "search" / "minilm-sentence-cosent-trial2.json"
"""A committed search record (best checkpoint at step 30 of 3 epochs × 640 pairs / batch 64): the fake records'
template."""


def arguments(tmp_path: Path, **settings) -> argparse.Namespace:
    found = {"output": tmp_path, "model": None, "cells": None, "losses": list(LOSSES), "data": None, "jobs": 1}
    return argparse.Namespace(**(found | {"max_runs": None, "runs": tmp_path / "runs"} | settings))


def fake_record(path: Path, best_dev: float, checkpoint: int = 30) -> None:
    """A run record whose only difference from the committed one is its best dev score and checkpoint."""
    result = RunResult.from_disk(REAL)
    stage = result.stages[0].model_copy(
        update={"best_dev_spearman": best_dev, "best_checkpoint": f"runs/x/checkpoints/checkpoint-{checkpoint}"}
    )
    result.model_copy(update={"stages": [stage]}).to_disk(path)


@pytest.fixture(scope="module")
def grown_senteval(tmp_path_factory) -> Path:
    """The miniature SentEval folder with 120 STS-B and 40 SICK training pairs of sentences in no test set added (so
    that ``sentence`` keeps pairs, some of them held out for dev), half of each scored 4 or more."""
    from pcctune.testing import make_mini_senteval

    root = make_mini_senteval(tmp_path_factory.mktemp("grown") / "senteval")
    words = ("red", "blue", "green", "small", "large", "quiet", "loud", "old", "new", "warm", "cold", "bright")

    def sentence(k: int, side: str) -> str:
        return f"The {words[k % 12]} {words[(k // 12) % 12]} {side} number {k} waits by the {words[(k * 7) % 12]} door."

    stsb = root / "downstream" / "STS" / "STSBenchmark" / "sts-train.csv"
    rows = [
        f"main-captions\tMSRvid\t2012test\t{9000 + k:04d}\t{k % 6}.0\t{sentence(k, 'cat')}\t{sentence(k, 'dog')}"
        for k in range(120)
    ]
    stsb.write_text(stsb.read_text(encoding="utf-8").rstrip("\n") + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    sick = root / "downstream" / "SICK" / "SICK_train.txt"
    rows = [
        f"{500 + k}\t{sentence(200 + k, 'fox')}\t{sentence(200 + k, 'owl')}\t{1 + k % 5}.0\tNEUTRAL" for k in range(40)
    ]
    sick.write_text(sick.read_text(encoding="utf-8").rstrip("\n") + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return root


def search_everything(args: argparse.Namespace, cell: Cell, best_point: int) -> None:
    for point in range(len(DESIGN)):
        for seed in wide.search_seeds(args, cell):
            score = 0.9 if point == best_point else 0.5 + 0.01 * point + 0.001 * seed
            fake_record(wide.record_path(args, wide.Run(cell, point, seed, False)), score)


def test_the_design_is_the_same_eight_points_in_the_space_for_every_loss_and_level(tmp_path):
    assert design() == DESIGN and len(DESIGN) == 8 and len({tuple(p.values()) for p in DESIGN}) == 8
    for point in DESIGN:
        assert LEARNING_RATES[0] <= point["learning_rate"] <= LEARNING_RATES[1] and point["batch_size"] in BATCH_SIZES
        assert point["epochs"] in EPOCHS and WARMUP[0] <= point["warmup_ratio"] <= WARMUP[1]
    assert sorted(point["epochs"] for point in DESIGN) == [1, 1, 2, 2, 3, 3, 4, 4]  # one point per eighth
    args = arguments(tmp_path)
    planned: dict[Cell, set[tuple[int, int]]] = {}
    for run in wide.plan(args):
        assert not run.scored  # nothing is tested before its cell's search has run
        planned.setdefault(run.cell, set()).add((run.point, run.seed))
    searched = [block for block in wide.BLOCKS if block.searched]
    assert len(planned) == sum(len(block.losses) for block in searched)
    two_seeds = {cell for cell in planned if cell.level == SENTENCE or cell.data == "control"}
    assert len(two_seeds) == 2 * len(LOSSES)  # sentence and its control: two search seeds; pair-sized levels: one
    for cell, points in planned.items():
        seeds = wide.SEARCH_SEEDS if cell in two_seeds else (wide.SEARCH_SEEDS[0],)
        assert points == {(point, seed) for point in range(8) for seed in seeds}, cell.name
    assert [cell.name for cell in planned][:10] == [
        *(f"minilm-sentence-{loss}" for loss in LOSSES),
        *(f"minilm-pair-control-{loss}" for loss in LOSSES),
    ]  # sentence and its control first


def test_no_search_seed_is_a_test_seed_and_tests_start_once_a_cells_search_has_run(tmp_path):
    args = arguments(tmp_path, cells=["sentence", "mpnet-sentence"], losses=["pearson", "cosine_mse"])
    assert not set(wide.SEARCH_SEEDS) & {*wide.TEST_SEEDS, *wide.MPNET_SEEDS}
    pearson = Cell(MINILM, SENTENCE, "pearson")
    search_everything(args, pearson, best_point=5)
    runs = list(wide.plan(args))
    tested = [run for run in runs if run.scored]
    assert {(run.cell.model, run.cell.loss) for run in tested} == {(MINILM, "pearson"), (wide.MPNET, "pearson")}
    assert all(run.point == 5 for run in tested)  # MiniLM's winner, also all-mpnet-base-v2's
    assert sorted(run.seed for run in tested if run.cell == pearson) == list(wide.TEST_SEEDS)
    assert sorted(run.seed for run in tested if run.cell.model == wide.MPNET) == list(wide.MPNET_SEEDS)
    assert all(run.seed in wide.SEARCH_SEEDS for run in runs if not run.scored)
    assert not {run.seed for run in tested} & set(wide.SEARCH_SEEDS)


def test_the_table_says_which_blocks_are_complete(tmp_path):
    """Each block's runs with a record against those planned: a searched cell and its test seeds count, nothing
    else does, and only a block with every run is complete."""
    args = arguments(tmp_path)
    pearson = Cell(MINILM, SENTENCE, "pearson")
    search_everything(args, pearson, best_point=2)
    for seed in wide.TEST_SEEDS:
        fake_record(wide.record_path(args, wide.Run(pearson, 2, seed, True)), 0.8)
    transfer = wide.folder(args) / "transfer"
    for name in ("base-probe1111", "minilm-sentence-pearson-seed3", "minilm-pair-pearson-seed1"):
        fake_record(transfer / f"{name}.json", 0.8)
    by_block = {block["block"]: block for block in wide.progress(args)}
    expected = {"block": "sentence", "search": [16, 80], "test": [5, 25], "growth": [0, 0], "transfer": [2, 8]}
    assert by_block["sentence"] == expected | {"settled": True}  # nothing grows before the level is read
    assert by_block["pair"] == {
        "block": "pair",
        "settled": True,
        "search": [0, 40],
        "test": [0, 25],
        "growth": [0, 0],
        "transfer": [2, 8],
    }
    assert by_block["control"]["transfer"] == [0, 0]  # the control has no transfer tasks
    assert by_block["mpnet-pair"]["search"] == [0, 0] and by_block["mpnet-pair"]["test"] == [0, 9]
    shown = wide_tables.progress_table(list(by_block.values()))
    assert "| sentence | 16 of 80 | 5 of 25 | no | — | 2 of 8 |" in shown
    assert "| mpnet-sentence | — (MiniLM's winners) | 0 of 9 | no | — | — |" in shown
    one = [{"block": "pair", "search": [40, 40], "test": [25, 25], "transfer": [0, 8]}]
    assert wide_tables.progress_table(one).endswith("| pair | 40 of 40 | 25 of 25 | yes | — | 0 of 8 |")


def test_the_winner_is_the_best_mean_over_search_seeds_and_waits_for_both(tmp_path):
    args = arguments(tmp_path)
    cell = Cell(MINILM, SENTENCE, "angle")
    search_everything(args, cell, best_point=2)
    record = wide.record_path(args, wide.Run(cell, 6, 102, False))
    fake_record(record, 0.99)  # one seed's best is not the best mean
    fake_record(wide.record_path(args, wide.Run(cell, 6, 101, False)), 0.75)
    assert wide.winner(args, cell) == 2 and wide.point_score(args, cell, 6) == pytest.approx(0.87)
    record.unlink()
    assert wide.winner(args, cell) is None and wide.point_score(args, cell, 6) is None


def test_a_resumed_runner_plans_only_the_runs_without_a_record(tmp_path, monkeypatch):
    monkeypatch.setattr(wide, "config", lambda args, run: run)
    args = arguments(tmp_path, cells=["sentence"], losses=["pearson"])
    cell = Cell(MINILM, SENTENCE, "pearson")
    first = [name for name, *_ in wide.missing_runs(args)]
    assert len(first) == 16 and len(set(first)) == 16
    fake_record(wide.record_path(args, wide.Run(cell, 0, 101, False)), 0.8)
    fake_record(wide.record_path(args, wide.Run(cell, 3, 102, False)), 0.8)
    second = [name for name, *_ in wide.missing_runs(args)]
    assert second == [
        name
        for name in first
        if name not in ("minilm-sentence-pearson-point0-seed101", "minilm-sentence-pearson-point3-seed102")
    ]
    search_everything(args, cell, best_point=4)
    fake_record(wide.record_path(args, wide.Run(cell, 4, 2, True)), 0.8)
    third = [name for name, *_ in wide.missing_runs(args)]
    assert third == [f"minilm-sentence-pearson-seed{seed}" for seed in (1, 3, 4, 5)]


def test_a_winner_whose_best_checkpoint_is_its_last_step_is_flagged():
    result = RunResult.from_disk(REAL)  # 3 epochs of 640 pairs in batches of 64: 30 steps, best at 30
    assert wide.last_step(result)
    earlier = result.stages[0].model_copy(update={"best_checkpoint": "runs/x/checkpoints/checkpoint-20"})
    assert not wide.last_step(result.model_copy(update={"stages": [earlier]}))
    search = [
        {"cell": "c", "point": k, "seed": s, "best_dev": 0.5 + 0.1 * (k == 1), "last_step": k == 1}
        for k in range(2)
        for s in (101, 102)
    ]
    assert "| c | 50.00 | **60.00**† |" in wide_tables.search_table(search, 2, {"c": 2})
    one_seed = [{**row, "cell": "d"} for row in search if row["seed"] == 101]  # a pair-sized level: one search seed
    table = wide_tables.search_table(search + one_seed, 2, {"c": 2, "d": 1})
    assert "| d | 50.00 | **60.00**† |" in table
    half = wide_tables.search_table([row for row in search if (row["point"], row["seed"]) != (1, 102)], 2, {"c": 2})
    assert "**" not in half  # a winner is marked once every point has run with every planned seed


@pytest.mark.parametrize("block", ["sentence", "control", "pair", "normalized", "near"])
def test_each_levels_dev_data_holds_nothing_that_level_removes(block, grown_senteval, tmp_path):
    from pcctune.data.leakage import TestIndex, split_clean
    from pcctune.data.tasks import load_test_tasks
    from pcctune.training.datasets import train_dataset
    from pcctune.training.dev import holds_out, stage_dev_parts

    args = arguments(tmp_path, data=str(grown_senteval))
    level = wide.BY_NAME[block].level
    stage = wide.config(args, wide.Run(wide.BY_NAME[block].cells(["pearson"])[0], 0, 101, False)).stages[0]
    assert stage.data.leakage == level
    parts = stage_dev_parts(stage, grown_senteval)
    index = TestIndex(load_test_tasks(grown_senteval))
    for pairs in parts.values():
        assert pairs and split_clean(pairs, index.check_all(pairs), level)[1] == []
    if "holdout" in parts:  # the held-out share is left out of training
        trained = train_dataset(stage, grown_senteval, holdout=holds_out(stage, grown_senteval))
        held = {(p.sentence1, p.sentence2) for p in parts["holdout"]}
        assert not held & set(zip(trained["sentence1"], trained["sentence2"], strict=True))
    assert ("holdout" in parts) >= (block in ("sentence", "control"))


def test_the_control_is_split_as_sentence_is(grown_senteval, tmp_path):
    from collections import Counter

    from pcctune.data.dev import in_holdout
    from pcctune.data.pairs import read_pairs_file
    from pcctune.data.stage2 import build_stage2_set

    path = wide.control_file(str(grown_senteval), tmp_path / wide.CONTROL_FILE)
    pair, sentence = (build_stage2_set(grown_senteval, level, rescale_sick=True) for level in (PAIR, SENTENCE))
    control = [
        p
        for p in pair.pairs
        if (p.sentence1, p.sentence2, p.score) in {(q.sentence1, q.sentence2, q.score) for q in read_pairs_file(path)}
    ]
    assert len(control) == len(read_pairs_file(path)) == len(sentence.pairs) > 0
    split = lambda pairs: Counter((p.source, in_holdout(p)) for p in pairs)  # noqa: E731
    assert split(control) == split(sentence.pairs)  # the same STS-B/SICK counts, the same share held out
    assert any(held for _, held in split(control)) and path.read_bytes() == wide.control_file(None, path).read_bytes()


def test_holms_correction_matches_a_hand_computed_example():
    from pcctune.evaluation.multiple import holm, holm_differences

    # sorted: 0.005 (≤ .05/4), 0.01 (≤ .05/3) rejected; 0.03 > .05/2 stops; adjusted 0.02, 0.03, 0.06, 0.06
    steps = holm([0.01, 0.04, 0.03, 0.005])
    assert [step.rejected for step in steps] == [True, False, False, True]
    assert [step.adjusted for step in steps] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.2])[0].adjusted == pytest.approx(0.2) and holm([]) == []
    a = {1: 80.0, 2: 80.2, 3: 80.1, 4: 79.9, 5: 80.0}
    family = {
        "clear": (a, {s: v + 1.0 + 0.05 * s for s, v in a.items()}),
        "close": (a, {s: v + 0.1 * (-1) ** s for s, v in a.items()}),
    }
    found = holm_differences(family)
    assert found["clear"].holm.rejected and not found["close"].holm.rejected
    for result in found.values():
        assert result.simultaneous.low <= result.plain.low and result.simultaneous.high >= result.plain.high
        assert result.simultaneous.confidence == pytest.approx(1 - 0.05 / 2)
        assert result.holm.rejected or not (result.simultaneous.low > 0 or result.simultaneous.high < 0)


def test_a_family_read_early_is_corrected_for_every_planned_comparison_and_its_wins_stay():
    from pcctune.evaluation.multiple import holm

    # two of four planned comparisons run: 0.02 is rejected over two (≤ .05/2) but not over four (> .05/4)
    assert holm([0.02, 0.001])[0].rejected and not holm([0.02, 0.001], family_size=4)[0].rejected
    early = holm([0.02, 0.001], family_size=4)
    assert early[1].rejected and early[1].adjusted == pytest.approx(0.004)
    with pytest.raises(PcctuneError, match="cannot hold"):
        holm([0.1, 0.2, 0.3], family_size=2)
    rng = np.random.default_rng(0)
    for _ in range(500):
        pvalues = list(rng.uniform(0, 0.06, size=6) ** rng.uniform(1, 3))
        ran = int(rng.integers(1, 6))
        so_far, complete = holm(pvalues[:ran], family_size=6), holm(pvalues)[:ran]
        assert all(c.rejected for s, c in zip(so_far, complete, strict=True) if s.rejected)


def test_the_front_pages_family_counts_every_planned_comparison_and_reads_a_level_once_complete():
    assert (
        comparisons.planned_comparisons()
        == sum(len(wide.BY_NAME[name].losses) - 1 for name in comparisons.FRONT_PAGE)
        == 8
    )
    shifts = {"pearson": 0.0, "cosine_mse": 0.0, "cosent": -3.0, "angle": -2.0, "contrastive": -1.0}
    rows = [
        {"cell": f"minilm-sentence-{loss}", "seed": seed, "sts": {"avg": 80.0 + shift + 0.1 * (seed * len(loss) % 3)}}
        for loss, shift in shifts.items()
        for seed in wide.TEST_SEEDS
    ]
    assert comparisons.family(rows, complete=set()) == {}  # a level is read once complete, not on the seeds run so far
    found = comparisons.family(rows, complete={"sentence"})
    assert sorted(loss for _, loss in found) == sorted(set(shifts) - {"pearson"})
    assert not found[("sentence", "cosine_mse")].holm.rejected
    assert found[("sentence", "cosent")].holm.rejected and found[("sentence", "cosent")].plain.mean > 2.5
    # the simultaneous intervals cover all eight planned comparisons, not only the four that have run
    assert all(result.simultaneous.confidence == pytest.approx(1 - 0.05 / 8) for result in found.values())
    assert {result.method for result in found.values()} == {"Bonferroni 99.375 % simultaneous, family of 8"}


def test_the_transfer_tasks_read_each_model_against_the_base_models_noise_floor():
    base = {f"base-probe{seed}": {"avg": avg} for seed, avg in zip(wide.PROBE_SEEDS, (83.4, 83.2, 83.5), strict=True)}
    within = comparisons.transfer_floor(base | {"minilm-sentence-pearson-seed1": {"avg": 83.3}}, ["sentence"])
    assert "83.20 to 83.50" in within[0] and "no loss hurts" in within[0] and "sentence" in within[0]
    models = {"minilm-pair-cosent-seed2": {"avg": 83.1}, "minilm-pair-pearson-seed1": {"avg": 84.0}}
    below = comparisons.transfer_floor(base | models, ["pair"])
    assert below[0].endswith("below it: minilm-pair-cosent-seed2 83.10")
    assert comparisons.transfer_floor(base | models, ["sentence"]) == []  # a block's own models only
    assert comparisons.transfer_floor(base | models, []) == []  # read once a block's evaluations have all run
    assert comparisons.transfer_floor({"base-probe1111": {"avg": 83.4}, **models}, ["pair"]) == []


def test_the_readme_shows_the_designs_eight_points():
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    rows = [line.replace("`", "").split("|")[2:6] for line in readme.splitlines() if re.match(r"  \| \d \|", line)]
    shown = [(float(lr), int(batch), float(warmup), int(epochs)) for lr, batch, warmup, epochs in rows]
    assert shown == [(p["learning_rate"], p["batch_size"], p["warmup_ratio"], p["epochs"]) for p in DESIGN]


def test_the_probe_seed_reaches_the_transfer_probe_and_its_record(mini_transfer, tiny_bert, monkeypatch):
    from pcctune.evaluation import transfer
    from pcctune.orchestration.evaluate import run_eval

    seeds: list[int] = []

    def probe(task, vectors, seed, probe):  # the probe itself is test_transfer's: here, the seed it is given
        seeds.append(seed)
        return TransferScore(name=task.name, accuracy=50.0, n_test=1)

    monkeypatch.setattr(transfer, "score_transfer_task", probe)
    record = run_eval(str(tiny_bert), mini_transfer, tasks="transfer", probe_seed=7)
    assert record.probe_seed == 7 and seeds == [7] * len(record.transfer_detail or []) and seeds


def test_the_front_page_takes_a_level_from_the_wide_search_once_it_is_complete(monkeypatch):
    shifts = {"pearson": 0.0, "cosine_mse": 0.1, "cosent": -3.0, "angle": -2.0, "contrastive": -1.0}
    rows = [
        {"cell": f"minilm-sentence-{loss}", "seed": seed, "sts": {"avg": 80.0 + shift + 0.1 * (seed * len(loss) % 3)}}
        for loss, shift in shifts.items()
        for seed in wide.TEST_SEEDS
    ]
    running = [
        {"block": "sentence", "search": [80, 80], "test": [24, 25]},
        {"block": "pair", "search": [3, 40], "test": [0, 25]},
    ]
    complete = [{"block": "sentence", "search": [80, 80], "test": [25, 25]}, running[1]]
    monkeypatch.setattr(wide, "details", lambda args: {"rows": rows, "progress": running})
    assert report.readme_rows()["loss"] == []  # a level is shown once complete, never on the seeds run so far
    monkeypatch.setattr(wide, "details", lambda args: {"rows": rows, "progress": complete})
    found = report.readme_rows()
    assert found["loss"] == ["`sentence`: avg, Pearson − loss [Bonferroni 99.375 % simultaneous, family of 8]"]
    [cosent] = found["CoSENT"]
    from pcctune.evaluation.compare import seed_difference

    assert "] [" not in cosent  # markdown would read "[a] [b]" as a link
    by_seed = {loss: {r["seed"]: r["sts"]["avg"] for r in rows if r["cell"].endswith(loss)} for loss in shifts}
    joint = seed_difference(by_seed["cosent"], by_seed["pearson"], confidence=1 - 0.05 / 8)
    assert cosent.endswith(f"; {joint.mean:+.2f} [{joint.low:+.2f}, {joint.high:+.2f}]")


def test_the_family_plot_draws_each_comparisons_interval_and_holms_around_it(tmp_path, monkeypatch):
    import pcctune.evaluation.report as figures

    shifts = {"pearson": 0.0, "cosine_mse": 0.1, "cosent": -3.0, "angle": -2.0, "contrastive": -1.0}
    rows = [
        {"cell": f"minilm-sentence-{loss}", "seed": seed, "sts": {"avg": 80.0 + shift + 0.1 * (seed * len(loss) % 3)}}
        for loss, shift in shifts.items()
        for seed in wide.TEST_SEEDS
    ]
    corrected = comparisons.family(rows, complete={"sentence"})
    drawn = {}
    monkeypatch.setattr(figures, "save_figure", lambda figure, path: drawn.update(figure=figure, path=path))
    report.family_plot(corrected, tmp_path / "wide.png")
    ax = drawn["figure"].axes[0]
    labels = [label.get_text() for label in ax.get_yticklabels()]
    assert labels == [f"sentence: Pearson − {loss}" for _, loss in reversed(list(corrected))]
    thick = [x for line in ax.get_lines() if line.get_linewidth() == 4 for x in line.get_xdata()]
    expected = [x for found in reversed(corrected.values()) for x in (found.plain.low, found.plain.high)]
    assert thick == pytest.approx(expected)
    monkeypatch.undo()
    report.family_plot(corrected, tmp_path / "real.png")  # the real writer leaves a PNG
    assert (tmp_path / "real.png").read_bytes().startswith(b"\x89PNG")


def test_blocks_off_the_front_page_and_their_level_contrasts_are_read_uncorrected_once_complete():
    shifts = {"pearson": 0.0, "cosine_mse": 0.1, "cosent": -3.0, "angle": -2.0, "contrastive": -1.0}
    moved = {"STS12": 2.0, "SICKRelatedness": -2.0}  # the control moves two test sets apart, the average by 1
    rows = [
        {
            "cell": f"minilm-{data}-{loss}",
            "seed": seed,
            "sts": {"avg": score} | {task: score + moves * moved.get(task, 0.0) for task in TASKS},
        }
        for data, base, moves in (("sentence", 80.0, 0), ("pair-control", 81.0, 1))
        for loss, shift in shifts.items()
        for seed in wide.TEST_SEEDS
        for score in [base + shift + 0.1 * (seed * len(loss) % 3)]
    ]
    assert (
        comparisons.outside_family(rows, {"sentence"}, {"sentence"})
        == comparisons.level_contrasts(rows, {"sentence", "pair"}, rows, {"sentence", "pair"})
        == []
    )
    control = comparisons.outside_family(rows, {"sentence", "control"}, {"sentence", "control"})
    assert len(control) == 4 and all(
        "**wide, control** (outside the planned family, uncorrected)" in line for line in control
    )
    growing_control = comparisons.outside_family(rows, {"sentence", "control"}, {"sentence"})
    assert all(
        "(outside the planned family, uncorrected; each loss at its first winner: the grown search is not complete)"
        in line
        for line in growing_control
    ) and [line.split("): ")[1] for line in growing_control] == [line.split("): ")[1] for line in control]
    cosent = next(line for line in control if "cosent" in line)
    assert "Pearson − cosent = +3.1" in cosent and cosent.endswith("a win for Pearson")
    first = [row | {"sts": {task: v + ("control" in row["cell"]) for task, v in row["sts"].items()}} for row in rows]
    growing = comparisons.level_contrasts(rows, {"sentence", "control"}, first, settled={"sentence"})
    assert all("control − sentence = +2.00" in line for line in growing[::2])  # both read at their first winners
    assert all("each level's first winner: the grown search is not complete at both" in line for line in growing[::2])
    contrasts = comparisons.level_contrasts(rows, {"sentence", "control"}, first, settled={"sentence", "control"})
    averages, by_task = contrasts[::2], contrasts[1::2]
    assert len(averages) == len(by_task) == 5 and all("control − sentence = +1.00" in line for line in averages)
    assert all(line.endswith("a win for control") for line in averages)
    assert all(
        "(95 %, uncorrected)" in line
        and "STS12 +3.00 [+3.00, +3.00]" in line
        and "SICK-R -1.00" in line
        and "STS13 +1.00" in line
        for line in by_task
    )


def test_the_front_pages_verdict_says_who_wins_each_comparison_level_by_level():
    """A loss that beats Pearson is said to, in Pearson's voice ("loses to"), never counted as a Pearson win; a loss
    whose decisions differ between the levels is read level by level; a tie gives its bound."""
    noise = {1: 0.0, 2: 0.1, 3: -0.1, 4: 0.05, 5: -0.05}
    shifts = {
        ("sentence", "cosine_mse"): 0.0,
        ("pair", "cosine_mse"): 0.0,
        ("sentence", "cosent"): 3.0,  # CoSENT above Pearson at sentence
        ("pair", "cosent"): -3.0,  # and below it at pair
        ("sentence", "angle"): 2.0,
        ("pair", "angle"): 2.0,
        ("sentence", "contrastive"): -2.0,
        ("pair", "contrastive"): -2.0,
    }
    rows = [
        {"cell": f"minilm-{level}-{loss}", "seed": seed, "sts": {"avg": 80.0 + shift + noise[seed] * len(loss)}}
        for (level, loss), shift in shifts.items()
        for seed in wide.TEST_SEEDS
    ]
    rows += [
        {"cell": f"minilm-{level}-pearson", "seed": seed, "sts": {"avg": 80.0 + noise[seed] * 3}}
        for level in ("sentence", "pair")
        for seed in wide.TEST_SEEDS
    ]
    corrected = comparisons.family(rows, complete={"sentence", "pair"})
    phrases = report.decided_phrases(corrected, ("sentence", "pair"))
    assert phrases[0].startswith("ties cosine-MSE (widest interval [")
    assert "loses to AnglE (at `sentence` and `pair`)" in phrases
    assert "beats the contrastive stage 2 (at `sentence` and `pair`)" in phrases
    assert "against CoSENT loses at `sentence` and wins at `pair`" in phrases
    assert not any(phrase.startswith("beats") and "AnglE" in phrase for phrase in phrases)


def test_a_level_is_final_only_once_its_grown_search_is_settled(monkeypatch):
    """While a level's growth is under way every loss there is read at its first winner and the verdict says it is
    not final; once settled, a winner still best at its last step is as far as the growth rule takes it."""
    monkeypatch.setattr(report, "base_scores", lambda: {"avg": 70.0})
    rows = {
        f"minilm-sentence-{loss}": [
            {"sts": {"avg": 80.0}, "last_step": True, "first_evaluation": False, "point": point} for _ in range(5)
        ]
        for loss, point in {"cosine_mse": "3x2", "cosent": "3x4h", "angle": 3, "contrastive": "3x8h"}.items()
    }
    growing = {"progress": [{"block": "sentence", "settled": False}]}
    words = report.caveats(growing, rows, ("sentence",))
    assert words.startswith("Not final: the grown search at `sentence` is not complete, and until it is, every loss")
    assert "best at their last step in most test seeds: cosine-MSE at `sentence` (5 of 5)," in words
    assert "limit" not in words and "The search grows" in words
    words = report.caveats({"progress": [{"block": "sentence", "settled": True}]}, rows, ("sentence",))
    assert words.startswith("Final (the claim holds up to the largest schedule the growth rule tried)")
    assert "CoSENT at `sentence` (5 of 5, the growth rule's limit)" in words and "The search grows" not in words


def test_the_front_pages_verdict_says_which_levels_it_covers_and_what_the_others_still_lack():
    blocks = [
        {"block": "sentence", "search": [80, 80], "test": [25, 25], "growth": [61, 61], "settled": True},
        {"block": "control", "search": [80, 80], "test": [25, 25], "growth": [0, 61], "settled": False},  # no level
        {"block": "normalized", "search": [16, 16], "test": [10, 10], "growth": [1, 4], "settled": False},
        {"block": "near", "search": [16, 16], "test": [10, 10], "growth": [0, 0], "settled": True},
    ]
    words = report.coverage(blocks, ("sentence",))
    assert words == (
        "The verdict covers `sentence`; `normalized` (1 of 4 grown-search runs so far) and `near` compare Pearson "
        "with cosine-MSE alone, outside the planned family."
    )
    assert report.coverage(blocks[:2], ("sentence",)) == "The verdict covers `sentence`."
    decided_so_far = {**blocks[2], "growth": [4, 4]}  # every planned grown run in, the growth still to decide
    assert report.coverage([decided_so_far], ("sentence",)) == (
        "The verdict covers `sentence`; `normalized` (its grown search not settled yet) compares Pearson with "
        "cosine-MSE alone, outside the planned family."
    )


def test_the_front_pages_verdict_names_the_grown_winners_level_by_level():
    runs = {
        "minilm-sentence-pearson": [{"point": "3x2"}],
        "minilm-sentence-cosent": [{"point": "3x8"}],
        "minilm-sentence-angle": [{"point": 3}],
        "minilm-pair-cosent": [{"point": "3x4h"}],
        "minilm-pair-pearson": [{"point": 3}],
    }
    clause = report.grown_winners(runs, ("sentence", "pair"))
    assert clause == (
        " and their growth where a winner binds (Pearson's 3x2 and CoSENT's 3x8 at `sentence`; CoSENT's 3x4h at `pair`)"
    )
    assert report.grown_winners({"minilm-sentence-pearson": [{"point": 3}]}, ("sentence",)) == ""  # none grown yet


def test_a_transfer_whose_model_is_not_on_this_machine_trains_its_run_again_first(mini_transfer, tiny_bert, tmp_path):
    """The run is trained again from its record into a folder of its own, its transfer tasks read that model, and
    the record says the model was trained again, with both runs' dev scores."""
    import shutil

    from pcctune.orchestration.library import train
    from pcctune.results import EvalResult
    from pcctune.training.config import RunConfig
    from tests.conftest import one_step_stage2

    stage = one_step_stage2(dev="sick-trial", eval_steps=1)
    config = {"model": str(tiny_bert), "data_dir": str(mini_transfer), "evaluate_before": False, "stages": [stage]}
    trained = train(RunConfig.model_validate(config | {"output_dir": str(tmp_path / "first")}))
    assert transfer_jobs.model_here(trained)
    other = trained.model_copy(update={"config": trained.config | {"seed": 99}})
    assert not transfer_jobs.model_here(other)  # another run in the same folder: not its model
    shutil.rmtree(tmp_path / "first")  # another machine's run folder
    assert not transfer_jobs.model_here(trained)
    record = tmp_path / "transfer.json"
    transfer_jobs.train_again_then_transfer(trained, tmp_path / "again", record, str(mini_transfer), 7)
    result = EvalResult.from_disk(record)
    assert result.transfer and result.probe_seed == 7 and Path(result.model).is_relative_to(tmp_path / "again")
    notes = {key: result.versions[key] for key in transfer_jobs.NOTES}
    assert notes["dev_spearman_of_the_scored_run"] == f"{trained.stages[-1].best_dev_spearman:.6f}"
    assert notes["model_trained_again_on"] == trained.versions["device"] and not (tmp_path / "first").exists()
    assert RunResult.from_disk(tmp_path / "again.json").config["seed"] == trained.config["seed"]  # kept: not again
