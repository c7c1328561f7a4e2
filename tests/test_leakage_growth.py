"""The wide search's growth (``reproductions/leakage/growth.py``, planned by ``wide.py``): a cell binds at the
space's edge or when best at its last step; a level that binds grows every loss's own winner alike, on search seeds;
a winner at 4× grows to 8×, no further; a changed winner runs on the test seeds and replaces the first in the
tables once all have run."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproductions.leakage import growth, transfer_jobs, wide
from reproductions.leakage.cells import HERE, MINILM, PAIR, SENTENCE, Cell
from reproductions.leakage.design import DESIGN
from reproductions.leakage.growth import GrownPoint

from pcctune.results import RunResult
from tests.test_leakage_wide import arguments, fake_record

PEARSON, COSENT = Cell(MINILM, SENTENCE, "pearson"), Cell(MINILM, SENTENCE, "cosent")
SCORED = HERE / "records" / "wide" / "minilm-sentence-pearson-seed1.json"
"""A committed test-seed record (4 epochs of 640 pairs in batches of 64: 40 steps): the fake test records' template."""


def fake_scored(path, best_dev: float, last: bool, point: growth.Point = 3) -> None:
    """A test-seed record whose only differences from the committed one (point 3) are its best dev score and
    checkpoint, and the settings of ``point`` it trained."""
    result = RunResult.from_disk(SCORED)
    checkpoint = f"runs/x/checkpoints/checkpoint-{40 if last else 20}"
    stage = result.stages[0].model_copy(update={"best_dev_spearman": best_dev, "best_checkpoint": checkpoint})
    trained = result.config["stages"][-1] | {key: growth.setting_of(point, DESIGN)[key] for key in wide.SETTING_KEYS}
    config = result.config | {"stages": [*result.config["stages"][:-1], trained]}
    result.model_copy(update={"stages": [stage], "config": config}).to_disk(path)


def search(args, cell: Cell, scores: dict[growth.Point, float]) -> None:
    """Search records of ``cell`` on every search seed: ``scores`` where given, 0.5 for the other design points."""
    for point in [*range(len(DESIGN)), *(p for p in scores if isinstance(p, str))]:
        for seed in wide.search_seeds(args, cell):
            fake_record(wide.record_path(args, wide.Run(cell, point, seed, False)), scores.get(point, 0.5))


def test_runs(args, cell: Cell, point: growth.Point, last_steps: int) -> None:
    """Test-seed records of ``cell``'s winner ``point``, the first ``last_steps`` of them best at their last step."""
    for k, seed in enumerate(wide.TEST_SEEDS):
        fake_scored(wide.record_path(args, wide.Run(cell, point, seed, True)), 0.8, last=k < last_steps, point=point)


test_runs.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def grown(args, block: str = "sentence") -> dict[str, list[tuple[growth.Point, int, bool]]]:
    """The planned runs of ``block`` beyond its first search and test seeds: cell → (point, seed, scored)."""
    found: dict[str, list[tuple[growth.Point, int, bool]]] = {}
    block_of = wide.BY_NAME[block]
    for run in wide.grown_runs(args, block_of, block_of.cells(args.losses)):
        found.setdefault(run.cell.loss, []).append((run.point, run.seed, run.scored))
    return found


def test_a_grown_point_keeps_batch_and_warm_up_and_grows_epochs_or_halves_the_rate():
    point = GrownPoint.parse("3x4h")
    assert (point.base, point.factor, point.half_rate, point.label) == (3, 4, True, "3x4h")
    setting = point.setting(DESIGN)
    assert setting == DESIGN[3] | {"epochs": 4 * DESIGN[3]["epochs"], "learning_rate": DESIGN[3]["learning_rate"] / 2}
    assert growth.setting_of("7x2", DESIGN) == DESIGN[7] | {"epochs": 2 * DESIGN[7]["epochs"]}
    assert growth.setting_of(5, DESIGN) == DESIGN[5]
    assert GrownPoint(3, 4).grows_further == GrownPoint(3, 8) and GrownPoint(3, 8).grows_further is None
    assert GrownPoint(3, 2).grows_further is None
    with pytest.raises(ValueError, match="not a grown point"):
        GrownPoint.parse("3")


def test_the_edge_is_the_most_epochs_the_most_steps_or_the_smallest_rate():
    edge = {k for k, setting in enumerate(DESIGN) if growth.at_the_edge(setting, DESIGN)}
    assert edge == {3, 5, 6, 7}  # 4 epochs (3, 5), 3 epochs at batch 32 (7), learning rate 1.1e-5 (6)
    assert growth.binds(DESIGN[2], [True, True, True, False, False], DESIGN)
    assert not growth.binds(DESIGN[2], [True, True, False, False, False], DESIGN)


def test_a_level_that_does_not_bind_does_not_grow(tmp_path):
    args = arguments(tmp_path, cells=["sentence"], losses=["pearson", "cosent"])
    for cell in (PEARSON, COSENT):
        search(args, cell, {2: 0.9})
        test_runs(args, cell, 2, last_steps=2)
    assert not wide.level_binds(args, wide.BY_NAME["sentence"]) and grown(args) == {}


def test_one_binding_cell_grows_every_loss_of_its_level_from_its_own_winner_on_search_seeds(tmp_path):
    args = arguments(tmp_path, cells=["sentence"], losses=["pearson", "cosent"])
    search(args, PEARSON, {2: 0.9})
    test_runs(args, PEARSON, 2, last_steps=0)
    search(args, COSENT, {4: 0.9})
    assert grown(args) == {}  # the rule is read once every cell's test seeds have run
    test_runs(args, COSENT, 4, last_steps=3)  # CoSENT's winner binds: best at its last step in 3 of 5 seeds
    plan = grown(args)
    seeds = wide.SEARCH_SEEDS
    assert plan["pearson"] == [(label, seed, False) for label in ("2x2", "2x4", "2x4h") for seed in seeds]
    assert plan["cosent"] == [(label, seed, False) for label in ("4x2", "4x4", "4x4h") for seed in seeds]
    assert not {seed for runs in plan.values() for _, seed, _ in runs} & set(wide.TEST_SEEDS)


def test_a_pair_sized_level_grows_without_the_half_rate_point(tmp_path):
    args = arguments(tmp_path, cells=["pair"], losses=["pearson"])
    cell = Cell(MINILM, PAIR, "pearson")
    search(args, cell, {3: 0.9})  # point 3: the most epochs, at the edge
    test_runs(args, cell, 3, last_steps=0)
    assert grown(args, "pair") == {"pearson": [("3x2", 101, False), ("3x4", 101, False)]}


def test_a_winner_at_4x_grows_to_8x_and_a_changed_winner_runs_on_the_test_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(wide, "pairs_trained", lambda stage, data: 640)  # the training set is not read here
    args = arguments(tmp_path, cells=["sentence"], losses=["pearson"])
    block = wide.BY_NAME["sentence"]
    search(args, PEARSON, {3: 0.8})
    test_runs(args, PEARSON, 3, last_steps=0)
    search(args, PEARSON, {3: 0.8, "3x2": 0.81, "3x4": 0.7, "3x4h": 0.85})
    grown_labels = wide.grown_points(args, block, PEARSON)
    assert grown_labels == ["3x2", "3x4", "3x4h", "3x8h"]
    assert wide.final_point(args, PEARSON, grown_labels) is None  # 3x8h has not run
    assert [run for run in grown(args)["pearson"] if run[0] == "3x8h"] == [("3x8h", 101, False), ("3x8h", 102, False)]
    search(args, PEARSON, {3: 0.8, "3x2": 0.81, "3x4": 0.7, "3x4h": 0.85, "3x8h": 0.9})
    assert wide.grown_points(args, block, PEARSON) == grown_labels  # 8× is the limit
    assert wide.final_point(args, PEARSON, grown_labels) == "3x8h"
    scored = [run for run in grown(args)["pearson"] if run[2]]
    assert scored == [("3x8h", seed, True) for seed in wide.TEST_SEEDS]
    record = wide.record_path(args, wide.Run(PEARSON, "3x8h", 1, True))
    assert record.parent.name == wide.GROWN and record.name == "minilm-sentence-pearson-seed1.json"
    run_config = wide.config(args, wide.Run(PEARSON, "3x8h", 1, True))
    config = run_config.stages[0]
    assert (config.epochs, config.learning_rate) == (8 * DESIGN[3]["epochs"], DESIGN[3]["learning_rate"] / 2)
    first = wide.config(args, wide.Run(PEARSON, 3, 1, True))  # the first winner's run of the same seed
    assert run_config.output_dir.split("/")[-2:] == [wide.GROWN, "minilm-sentence-pearson-seed1"]
    assert first.output_dir.split("/")[-2:] == [wide.WIDE, "minilm-sentence-pearson-seed1"]


def test_a_winner_kept_by_the_grown_search_runs_no_test_seed_again(tmp_path):
    args = arguments(tmp_path, cells=["sentence"], losses=["pearson"])
    search(args, PEARSON, {3: 0.9, "3x2": 0.8, "3x4": 0.7, "3x4h": 0.6})
    test_runs(args, PEARSON, 3, last_steps=0)
    assert wide.final_point(args, PEARSON, wide.grown_points(args, wide.BY_NAME["sentence"], PEARSON)) == 3
    assert not any(scored for *_, scored in grown(args)["pearson"])


def test_the_tables_read_a_changed_winner_once_all_its_test_seeds_have_run(tmp_path):
    args = arguments(tmp_path, cells=["sentence"], losses=["pearson"])
    search(args, PEARSON, {3: 0.8, "3x2": 0.9, "3x4": 0.7, "3x4h": 0.6})
    test_runs(args, PEARSON, 3, last_steps=0)
    for seed in wide.TEST_SEEDS[:4]:
        fake_scored(wide.record_path(args, wide.Run(PEARSON, "3x2", seed, True)), 0.85, False, "3x2")
    found = wide.details(args)
    assert {row["point"] for row in found["rows"]} == {3} and found["first_rows"] == []
    assert {row["point"] for row in found["growth"]} == {"3x2", "3x4", "3x4h"}
    fake_scored(wide.record_path(args, wide.Run(PEARSON, "3x2", 5, True)), 0.85, False, "3x2")
    found = wide.details(args)
    assert len(found["first_rows"]) == 5 and {row["best_dev"] for row in found["rows"]} == {0.85}
    progress = {block["block"]: block for block in found["progress"]}["sentence"]
    assert progress["growth"] == [11, 11]  # 3 grown points × 2 search seeds, 5 test seeds


def test_a_level_still_growing_is_read_at_every_losss_first_winner(tmp_path):
    """One loss's grown winner, tested on every seed, joins the family only once the level's growth is settled:
    never some losses at their grown winners and others at their first."""
    from reproductions.leakage.wide_tables import wide_table

    args = arguments(tmp_path, cells=["sentence"], losses=["pearson", "cosent"])
    for cell in (PEARSON, COSENT):
        search(args, cell, {3: 0.8, "3x2": 0.9, "3x4": 0.7, "3x4h": 0.6} if cell == PEARSON else {3: 0.8})
        test_runs(args, cell, 3, last_steps=0)
    for seed in wide.TEST_SEEDS:
        fake_scored(wide.record_path(args, wide.Run(PEARSON, "3x2", seed, True)), 0.85, False, "3x2")
    found = wide.details(args)  # CoSENT's grown points have not run: the level is still growing
    assert {row["point"] for row in found["rows"]} == {3} and found["first_rows"] == []
    growing = found["growing_rows"]  # (the fake records copy point 3's settings: told apart by their dev score)
    assert {(row["cell"], row["best_dev"]) for row in growing} == {(PEARSON.name, 0.85)} and len(growing) == 5
    assert wide.winner_results(args, wide.BY_NAME["sentence"], PEARSON)[0] == ""
    shown = wide_table(found, {})
    assert "still under way" in shown and "| sentence | 32 of 32 | 10 of 10 | yes | 11 of 17, so far |" in shown
    search(args, COSENT, {3: 0.8, "3x2": 0.7, "3x4": 0.6, "3x4h": 0.5})  # CoSENT keeps point 3: settled
    found = wide.details(args)
    assert {(row["cell"], row["best_dev"]) for row in found["rows"]} == {(PEARSON.name, 0.85), (COSENT.name, 0.8)}
    assert found["growing_rows"] == [] and len(found["first_rows"]) == 5
    assert "| 17 of 17, complete |" in wide_table(found, {})


def test_a_replaced_winner_stays_in_the_tables_as_the_first_search_left_it(tmp_path):
    """The first winners' rows remain printed (a claim's README quoting them stays backed) and the first search's
    records read again give them back."""
    from reproductions.leakage.wide_tables import before_growth, wide_table

    args = arguments(tmp_path, cells=["sentence"], losses=["pearson"])
    search(args, PEARSON, {3: 0.8, "3x2": 0.9, "3x4": 0.7, "3x4h": 0.6})
    test_runs(args, PEARSON, 3, last_steps=0)
    for seed in wide.TEST_SEEDS:
        fake_scored(wide.record_path(args, wide.Run(PEARSON, "3x2", seed, True)), 0.85, False, "3x2")
    found = wide.details(args)
    first = before_growth(found)
    assert {row["best_dev"] for row in first["rows"]} == {0.8} and {row["best_dev"] for row in found["rows"]} == {0.85}
    table = wide_table(found, {})
    assert "The first search's winners that the grown search replaced" in table
    assert "| 80.00 ± 0.00 |" in table and "| 85.00 ± 0.00 |" in table


def test_the_grown_search_table_shows_each_point_the_best_so_far_and_the_selections_noise():
    """The best so far is read among the design points and the grown points every search seed has run; its margin
    over the runner-up and each search seed's own choice among the same points show how firm the choice is."""
    from reproductions.leakage.wide_tables import growth_table

    scores = {(3, 1): 0.81, (3, 2): 0.81, (6, 1): 0.76, (6, 2): 0.84}  # point 6: the best of seed 2, not of both
    search = [
        {"cell": "c", "point": k, "seed": s, "best_dev": scores.get((k, s), 0.80)} for k in range(8) for s in (1, 2)
    ]
    grown = [{"cell": "c", "point": "3x2", "seed": s, "best_dev": 0.83, "last_step": s == 1} for s in (1, 2)]
    grown += [{"cell": "c", "point": "3x4", "seed": 1, "best_dev": 0.90, "last_step": False}]
    table = growth_table(grown, search, {"c": 2})
    # 3x4 has not run on both seeds: not read; seed 2 alone would choose point 6 (0.84 against 3x2's 0.83)
    row = "| c | point 3 (81.00) | 3x2: 83.00†; 3x4: 90.00 (1 of 2 seeds) | 3x2 | +2.00 (point 3) |"
    assert row + " 1: 3x2, 2: point 6 |" in table


def test_a_changed_winners_model_replaces_the_first_in_the_transfer_tasks(tmp_path):
    """Once a changed winner has run on every test seed, its best model by dev is the one the transfer tasks read
    (its record named with its point); the first winner's evaluation moves to a table of its own and no longer
    counts as done."""
    import shutil

    args = arguments(tmp_path, cells=["sentence"], losses=["pearson"])
    block = wide.BY_NAME["sentence"]
    search(args, PEARSON, {3: 0.8, "3x2": 0.9, "3x4": 0.7, "3x4h": 0.6})
    test_runs(args, PEARSON, 3, last_steps=0)
    transfer = wide.folder(args) / "transfer"
    transfer.mkdir(parents=True)
    committed = HERE / "records" / "wide" / "transfer" / "base-probe1111.json"
    for name in [*(f"base-probe{seed}" for seed in wide.PROBE_SEEDS), "minilm-sentence-pearson-seed1"]:
        shutil.copy(committed, transfer / f"{name}.json")
    assert [name for name, *_ in wide.transfer_models(args, [block])][-1] == "minilm-sentence-pearson-seed1"
    for seed in wide.TEST_SEEDS:
        fake_scored(
            wide.record_path(args, wide.Run(PEARSON, "3x2", seed, True)), 0.85 + 0.01 * (seed == 3), False, "3x2"
        )
    (name, model, probe_seed, _), *_ = [job for job in wide.transfer_models(args, [block]) if "pearson" in job[0]]
    assert (name, probe_seed) == ("minilm-sentence-pearson-3x2-seed3", wide.PROBE_SEEDS[0])
    assert model == RunResult.from_disk(wide.record_path(args, wide.Run(PEARSON, "3x2", 3, True))).stages[0].final_dir
    [(job, function, trained, again, *_)] = wide.missing_transfers(args, [block])
    assert job == name and not Path(model).exists()  # trained on another machine: its run folder is not here
    assert function is transfer_jobs.train_again_then_transfer and again == args.runs / "again" / name
    assert trained.stages[0].final_dir == model
    found = wide.details(args)
    assert list(found["first_transfer"]) == ["minilm-sentence-pearson-seed1"]
    assert "minilm-sentence-pearson-seed1" not in found["transfer"]
    progress = {block["block"]: block for block in found["progress"]}["sentence"]
    assert progress["transfer"] == [3, 4]  # the noise floor's three, the changed winner's not yet
    shutil.copy(committed, transfer / f"{name}.json")
    assert {block["block"]: block for block in wide.progress(args)}["sentence"]["transfer"] == [4, 4]
    assert name in wide.details(args)["transfer"]
    from reproductions.leakage.wide_tables import wide_table

    assert "Transfer tasks of the first winners' models that the grown search replaced" in wide_table(found, {})


def test_the_growth_plot_draws_each_losss_first_winner_and_its_grown_points_by_epochs(tmp_path):
    from reproductions.leakage.report import growth_curves, growth_plot

    def row(cell: str, point: growth.Point, seed: int, best_dev: float) -> dict:
        return {"cell": cell, "point": point, "seed": seed, "best_dev": best_dev, "last_step": False} | {
            "settings": growth.setting_of(point, DESIGN)
        }

    search = [
        row(cell, k, seed, 0.8)
        for cell in ("minilm-sentence-cosent", "minilm-pair-angle")
        for k in range(8)
        for seed in (101, 102)
    ]
    grown = [
        row("minilm-sentence-cosent", label, seed, dev)
        for label, dev in (("3x2", 0.84), ("3x4h", 0.82))
        for seed in (101, 102)
    ]
    grown += [row("minilm-sentence-cosent", "3x4", 101, 0.9)]  # one seed of two: not drawn yet
    grown += [row("minilm-pair-angle", "7x2", 101, 0.85), row("minilm-pair-angle", "7x2", 102, 0.87)]
    found = {"search": search, "growth": grown}
    epochs = DESIGN[3]["epochs"]
    assert growth_curves(found) == {
        "minilm-sentence": {"cosent": [(epochs, 80.0, False), (2 * epochs, 84.0, False), (4 * epochs, 82.0, True)]},
        "minilm-pair": {"angle": [(DESIGN[7]["epochs"], 80.0, False), (2 * DESIGN[7]["epochs"], 86.0, False)]},
    }
    growth_plot(found, tmp_path / "growth.png")
    assert (tmp_path / "growth.png").read_bytes().startswith(b"\x89PNG")


def test_a_changed_winners_test_record_of_another_setting_is_refused(tmp_path):
    """A changed winner's test record is named by its cell and seed alone: one trained at another point than the
    cell's final winner (a winner that changed again after its test runs) stops the tables, not read as the winner's."""
    args = arguments(tmp_path, cells=["sentence"], losses=["pearson"])
    search(args, PEARSON, {3: 0.8, "3x2": 0.9, "3x4": 0.7, "3x4h": 0.6})
    test_runs(args, PEARSON, 3, last_steps=0)
    for seed in wide.TEST_SEEDS:
        fake_scored(wide.record_path(args, wide.Run(PEARSON, "3x2", seed, True)), 0.85, False, "3x4")
    with pytest.raises(SystemExit, match="not its winner 3x2"):
        wide.details(args)
