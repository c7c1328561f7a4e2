"""``pcctune sweep``: dev-only search with optuna, resumable, then the winner over seeds."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import pairs_jsonl, run_cli, stage_record


@pytest.fixture()
def sweep_inputs(tmp_path, tiny_bert, shared_senteval):
    pairs_jsonl(tmp_path / "pairs.jsonl", 32)
    config = {
        "model": str(tiny_bert),
        "data_dir": str(shared_senteval),
        "output_dir": str(tmp_path / "unused"),
        "evaluate_before": False,
        "stages": [
            {
                "name": "pcc",
                "loss": "pearson",
                "data": {"source": "pairs", "path": str(tmp_path / "pairs.jsonl")},
                "batch_size": 8,
                "max_steps": 4,
                "eval_steps": 2,
                "dev": "sick-trial",
            }
        ],
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    space = {
        "stages.0.learning_rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
        "stages.0.warmup_ratio": {"type": "categorical", "choices": [0.0, 0.1]},
    }
    (tmp_path / "space.yaml").write_text(yaml.safe_dump(space))
    return tmp_path


def test_sweep_selects_on_dev_only_survives_a_kill_and_scores_the_winner(sweep_inputs, monkeypatch, capsys):
    import pcctune.orchestration.pipeline as pipeline
    from pcctune.results import BenchmarkResult

    folder = sweep_inputs
    events: list[str] = []
    real_evaluate, real_train = pipeline.evaluate_sts, pipeline.Pipeline.train

    def spy_evaluate(model, tasks, *args, **kwargs):
        events.append("test-evaluation")
        return real_evaluate(model, tasks, *args, **kwargs)

    trained = {"count": 0}

    def train_then_die_once(self, *args, **kwargs):
        events.append(f"train {self.config.output_dir}")
        trained["count"] += 1
        if trained["count"] == 2:  # the second trial dies: the sweep must continue it on rerun
            raise KeyboardInterrupt
        return real_train(self, *args, **kwargs)

    monkeypatch.setattr(pipeline, "evaluate_sts", spy_evaluate)
    monkeypatch.setattr(pipeline.Pipeline, "train", train_then_die_once)
    import optuna

    verbosity = optuna.logging.get_verbosity()
    args = [
        "sweep",
        str(folder / "run.yaml"),
        "--space",
        str(folder / "space.yaml"),
        "--trials",
        "2",
        "--seeds",
        "2",
        "--output",
        str(folder / "sweep"),
    ]
    code, output = run_cli(args, capsys)
    assert code == 130 and "continue with: pcctune sweep" in output
    code, output = run_cli(args, capsys)
    assert code == 0, output
    # the test sets were scored only after every trial was done and the winner fixed (the seed runs)
    last_trial = max(i for i, e in enumerate(events) if "/trials/" in e)
    assert events.index("test-evaluation") > last_trial and sum("/trials/" in e for e in events) == 3
    assert sum("/seeds/" in e for e in events) == 2
    study = optuna.load_study(study_name="pcctune", storage=f"sqlite:///{folder / 'sweep' / 'study.db'}")
    states = [t.state.name for t in study.trials]
    assert states.count("COMPLETE") + states.count("PRUNED") == 2 and "FAIL" in states  # the killed one, replaced
    best = yaml.safe_load((folder / "sweep" / "best_config.yaml").read_text())
    assert best["stages"][0]["learning_rate"] == pytest.approx(study.best_params["stages.0.learning_rate"])
    assert "Chosen by `pcctune sweep" in (folder / "sweep" / "best_config.yaml").read_text()
    summary = BenchmarkResult.from_disk(folder / "sweep" / "sweep.json")
    assert [r.label for r in summary.rows] == ["seed 1", "seed 2"] and "avg" in summary.rows[0].sts
    assert "mean ± std" in (folder / "sweep" / "summary.md").read_text()
    assert (folder / "sweep" / "space.png").stat().st_size > 1000  # every complete trial against each searched value
    # each seed run's record says whether its best checkpoint was its last dev evaluation, and the summary counts them
    flags = [row.details["best_at_last_evaluation"] for row in summary.rows]
    assert all(isinstance(flag, bool) for flag in flags), flags
    last_line = f"best at its last dev evaluation in {sum(flags)} of 2 seed runs"
    assert (
        last_line in (folder / "sweep" / "summary.md").read_text()
        and last_line in summary.details["where_the_winner_sits"]
    )
    # trial folders are ordinary run folders; a finished trial keeps its final model but no checkpoints
    finished = [p for p in (folder / "sweep" / "trials").iterdir() if (p / "results.json").is_file()]
    assert finished and all((p / "run.json").is_file() for p in finished)
    assert all(list(p.glob("*/final")) and not list(p.glob("*/checkpoints")) for p in finished)
    seed_runs = list((folder / "sweep" / "seeds").iterdir())
    assert len(seed_runs) == 2 and all(list(p.glob("*/final")) and not list(p.glob("*/checkpoints")) for p in seed_runs)
    assert optuna.logging.get_verbosity() == verbosity  # quiet during the search only
    events.clear()
    code, output = run_cli(args, capsys)  # run again: every trial and seed run is read back, nothing trains
    assert code == 0 and not [e for e in events if e.startswith("train")], output
    (folder / "space2.yaml").write_text("stages.0.learning_rate: {type: float, low: 1.0e-5, high: 1.0e-4}\n")
    code, output = run_cli([*args[:3], str(folder / "space2.yaml"), *args[4:]], capsys)
    assert code == 2 and "holds a sweep of another config, search space, data" in output
    # a rerun whose search found another winner trains the seed runs again instead of stopping at the old ones
    from rich.console import Console

    from pcctune.orchestration.search_space import load_space
    from pcctune.orchestration.sweep import Sweep

    sweep = Sweep(folder / "run.yaml", load_space(folder / "space.yaml"), folder / "sweep", {}, Console(), 0)
    other = {"stages.0.learning_rate": 5e-3, "stages.0.warmup_ratio": 0.1}
    events.clear()
    (again,) = sweep.seed_runs(other, 1)
    assert [e for e in events if e.startswith("train") and "/seeds/seed-1" in e]
    assert again.config["stages"][0]["learning_rate"] == pytest.approx(5e-3)


def test_bad_search_spaces_are_one_line(sweep_inputs, capsys):
    folder = sweep_inputs
    (folder / "bad.yaml").write_text("stages.0.learning_rate: {type: float, low: 1.0, high: 0.1}\n")
    code, output = run_cli(
        ["sweep", str(folder / "run.yaml"), "--space", str(folder / "bad.yaml"), "--output", str(folder / "s")], capsys
    )
    assert code == 2 and "needs low < high" in output
    assert not (folder / "s").exists()


def test_a_dev_set_too_small_stops_the_sweep_before_any_trial(sweep_inputs, mini_senteval, capsys):
    folder = sweep_inputs
    stsb = mini_senteval / "downstream" / "STS" / "STSBenchmark" / "sts-dev.csv"
    stsb.write_text(stsb.read_text().splitlines()[0] + "\n")  # only a pair STS12 also holds
    args = ["sweep", str(folder / "run.yaml"), "--space", str(folder / "space.yaml"), "--output", str(folder / "s")]
    pinned = ["--set", "stages.0.data.leakage=pair"]  # above `pair` a built-in dev set this small gives way to holdout
    code, output = run_cli(
        [*args, "--data", str(mini_senteval), "--set", "stages.0.dev=stsb-dev-filtered", *pinned], capsys
    )
    assert code == 2 and "'stsb-dev-filtered' keeps 0 pairs" in output
    assert not (folder / "s").exists()


@pytest.mark.parametrize(("prune_after", "pruned"), [(0, True), (10, False)])
def test_prune_after_spares_a_slow_starter_until_that_step(sweep_inputs, prune_after, pruned):
    """Two finished trials at dev 0.9 by step 2; a third at 0.1 on step 2 is cut only past --prune-after."""
    from rich.console import Console

    from pcctune.orchestration.search_space import load_space
    from pcctune.orchestration.sweep import Sweep

    folder = sweep_inputs
    sweep = Sweep(
        folder / "run.yaml", load_space(folder / "space.yaml"), folder / "s", {}, Console(), prune_after=prune_after
    )
    study = sweep.study()
    for _ in range(2):
        trial = study.ask()
        trial.report(0.9, 2)
        study.tell(trial, 0.9)
    slow_starter = study.ask()
    slow_starter.report(0.1, 2)
    assert bool(slow_starter.should_prune()) is pruned


def test_the_sweep_identity_follows_the_content_of_its_data_not_the_folder_it_lies_in(sweep_inputs, shared_senteval):
    import shutil

    from pcctune.orchestration.sweep import load_space, sweep_identity
    from pcctune.training.config import load_config

    folder = sweep_inputs
    base, space = load_config(folder / "run.yaml"), load_space(folder / "space.yaml")
    first = sweep_identity(base, space, 0, shared_senteval)
    moved = folder / "moved-senteval"
    shutil.copytree(shared_senteval, moved)
    assert sweep_identity(base, space, 0, moved) == first  # the same files elsewhere
    pairs = folder / "pairs.jsonl"
    pairs.write_text(pairs.read_text().replace('"score": 0.0', '"score": 0.5', 1))
    assert sweep_identity(base, space, 0, shared_senteval) != first  # a training file edited in place


def test_the_sweep_identity_changes_with_the_code_and_the_libraries_that_run_a_trial(
    sweep_inputs, shared_senteval, monkeypatch
):
    """Trials made by other code or library versions score differently: resuming them as this sweep's is refused."""
    from pcctune.orchestration import sweep
    from pcctune.training.config import load_config

    base, space = load_config(sweep_inputs / "run.yaml"), sweep.load_space(sweep_inputs / "space.yaml")
    first = sweep.sweep_identity(base, space, 0, shared_senteval)
    assert sweep.sweep_identity(base, space, 0, shared_senteval) == first
    monkeypatch.setattr(sweep, "library_versions", lambda: {"transformers": "0.0.0"})
    upgraded = sweep.sweep_identity(base, space, 0, shared_senteval)
    assert upgraded != first
    monkeypatch.setattr(sweep, "code_digest", lambda *modules: "another")
    assert sweep.sweep_identity(base, space, 0, shared_senteval) not in (first, upgraded)


@pytest.mark.parametrize(
    ("data", "loss", "read", "extra"),
    [
        ({"source": "snli", "splits": ["dev"]}, "infonce", "downstream/SNLI/labels.dev", {}),
        ({"source": "snli_regression", "splits": ["test"]}, "cosine_mse", "downstream/SNLI/s2.test", {}),
        ({"source": "stage2"}, "dpo", "downstream/SNLI/s1.test", {"dpo": {"candidates": "snli"}}),
        ({"source": "stage2"}, "smooth_k2", "downstream/SNLI/s1.dev", {"regression": {"head_warmup": "nli"}}),
    ],
)
def test_the_sweep_identity_and_the_run_record_follow_the_snli_files_a_stage_reads(
    sweep_inputs, mini_senteval, data, loss, read, extra
):
    from pcctune.orchestration.sweep import load_space, sweep_identity
    from pcctune.provenance import file_hashes
    from pcctune.training.config import load_config
    from pcctune.training.dev import stage_data_files

    folder = sweep_inputs
    stage = {"data": data, "loss": loss} | extra
    base = load_config(folder / "run.yaml", {f"stages.0.{key}": value for key, value in stage.items()})
    space = load_space(folder / "space.yaml")
    hashed = file_hashes(stage_data_files(base.stages[0], mini_senteval), mini_senteval)
    unread = "downstream/SNLI/s1.test" if read.endswith(".dev") else "downstream/SNLI/s1.dev"
    assert read in hashed and (unread not in hashed or extra)  # the splits read, and only those
    first = sweep_identity(base, space, 0, mini_senteval)
    path = mini_senteval / read
    path.write_text(path.read_text().replace("entailment", "neutral", 1) + "one more line\n")
    assert sweep_identity(base, space, 0, mini_senteval) != first


def test_a_local_hub_source_is_hashed_by_its_data_files_and_a_hub_id_by_none(tmp_path, mini_senteval):
    from pcctune.training.config import StageConfig
    from pcctune.training.dev import stage_data_files

    dataset = tmp_path / "my-dataset"
    (dataset / "data").mkdir(parents=True)
    (dataset / "data" / "train.csv").write_text("anchor,positive\na,b\n")
    (dataset / "README.md").write_text("# card\n")
    (dataset / ".cache").mkdir()
    (dataset / ".cache" / "stale.arrow").write_text("x")

    def files(data: dict) -> list:
        stage = StageConfig.model_validate({"name": "s", "loss": "infonce", "data": data, "dev": "none"})
        return stage_data_files(stage, mini_senteval)

    assert files({"source": "hub", "name": str(dataset)}) == [dataset / "data" / "train.csv"]
    assert files({"source": "hub", "name": "sentence-transformers/all-nli", "subset": "triplet"}) == []


def test_a_study_no_trial_finished_in_becomes_the_next_sweeps_and_a_finished_one_stays_its_own(sweep_inputs):
    """A sweep that died before its first trial finished (a space fixed since) does not block its folder."""
    import optuna
    from rich.console import Console

    from pcctune.errors import PcctuneError
    from pcctune.orchestration.search_space import load_space
    from pcctune.orchestration.sweep import Sweep

    folder = sweep_inputs

    def sweep(warmups: list[float]) -> Sweep:
        (folder / "space.yaml").write_text(
            yaml.safe_dump({"stages.0.warmup_ratio": {"type": "categorical", "choices": warmups}})
        )
        return Sweep(folder / "run.yaml", load_space(folder / "space.yaml"), folder / "s", {}, Console(), 0)

    first = sweep([0.0, 0.1]).study()
    first.tell(first.ask(), state=optuna.trial.TrialState.FAIL)
    fixed = sweep([0.0, 0.05])
    assert fixed.study().user_attrs["sweep"] == fixed.identity
    study = fixed.study()
    study.tell(study.ask(), 0.5)
    with pytest.raises(PcctuneError, match="holds a sweep of another config, search space, data"):
        sweep([0.0, 0.2]).study()


def test_a_resumed_sweep_draws_new_points_not_the_ones_it_ran(sweep_inputs):
    """Each process seeds its sampler: alike in every process, the first, random trials of a resumed sweep were the
    points it had already run. Seeded past the trials so far, the study draws new ones; a fresh sweep is unchanged."""
    from rich.console import Console

    from pcctune.orchestration.search_space import load_space
    from pcctune.orchestration.sweep import Sweep, suggest

    def draws(output: str, count: int) -> list[dict]:
        sweep = Sweep(
            sweep_inputs / "run.yaml", load_space(sweep_inputs / "space.yaml"), sweep_inputs / output, {}, Console(), 0
        )
        study = sweep.study()
        drawn = []
        for _ in range(count):
            trial = study.ask()
            drawn.append(suggest(trial, sweep.space))
            study.tell(trial, 0.5)
        return drawn

    uninterrupted = draws("whole", 4)
    first, resumed = draws("cut", 2), draws("cut", 2)  # the same sweep, its process started again after 2 trials
    assert first == uninterrupted[:2] and resumed != first
    assert draws("fresh", 2) == uninterrupted[:2]  # a fresh sweep draws as before


def test_the_pruner_reads_only_the_last_stage():
    """A later stage's steps count from 0 again and optuna keeps a step's first value: an earlier stage's
    evaluations would stand in for the last stage's, which the objective reads."""
    from types import SimpleNamespace

    from pcctune.orchestration.sweep import ReportToPruner

    reported = []
    trial = SimpleNamespace(report=lambda value, step: reported.append((value, step)), should_prune=lambda: False)
    reporter = ReportToPruner(trial, "eval_dev", stages=2)
    state = SimpleNamespace(global_step=2)
    for value in (0.3, 0.7):  # stage 1, then stage 2, each evaluated at its step 2
        reporter.on_train_begin(None, state, None)
        reporter.on_evaluate(None, state, None, metrics={"eval_dev": value})
    assert reported == [(0.7, 2)]


def test_a_diverged_trial_fails_alone_and_the_sweep_goes_on(sweep_inputs, monkeypatch):
    import optuna
    from rich.console import Console

    import pcctune.orchestration.sweep as sweep_module
    from pcctune.orchestration.search_space import load_space
    from pcctune.training.health import NonFiniteTraining

    real, calls = sweep_module.run_pipeline, []

    def first_diverges(config, **options):
        calls.append(config.output_dir)
        if len(calls) == 1:
            raise NonFiniteTraining("pcc", 3)
        return real(config, **options)

    monkeypatch.setattr(sweep_module, "run_pipeline", first_diverges)
    space = load_space(sweep_inputs / "space.yaml")
    sweep = sweep_module.Sweep(sweep_inputs / "run.yaml", space, sweep_inputs / "s", {}, Console(quiet=True), 0)
    study = sweep.search(2)
    states = [trial.state for trial in study.trials]
    assert states == [optuna.trial.TrialState.FAIL, *[optuna.trial.TrialState.COMPLETE] * 2]


def _seed_run(best_at_last: bool | None):
    from pcctune.results import RunResult

    return RunResult(protocol="simcse-senteval", data_dir="d", seed=1, config={}, stages=[stage_record(best_at_last)])


def test_a_value_at_the_edge_of_its_space_is_named_and_one_inside_is_not():
    from pcctune.orchestration.search_space import Distribution, edge, edges

    rate = Distribution(type="float", low=1e-6, high=1e-2, log=True)
    assert edge(1.5e-6, rate) == "the low end (1e-06)" and edge(8e-3, rate) == "the high end (0.01)"
    assert edge(1e-4, rate) is None  # the middle of the log scale, though near the low end on a linear one
    assert edge(1e-4, Distribution(type="float", low=1e-6, high=1e-2)) == "the low end (1e-06)"
    epochs = Distribution(type="categorical", choices=[1, 2, 4])
    assert edge(4, epochs) == "the largest of [1, 2, 4]" and edge(1, epochs) == "the smallest of [1, 2, 4]"
    assert edge(2, epochs) is None
    assert edge(0.1, Distribution(type="categorical", choices=[0.0, 0.1])) is None  # two choices say nothing
    assert edge(True, Distribution(type="categorical", choices=[False, True, True])) is None  # not a scale
    assert edge(10, Distribution(type="int", low=1, high=10)) == "the high end (10)"
    space = {"stages.0.learning_rate": rate, "stages.0.epochs": epochs}
    params = {"stages.0.learning_rate": 1e-4, "stages.0.epochs": 4}
    assert edges(space, params) == {"stages.0.epochs": "the largest of [1, 2, 4]"}


def test_choices_written_as_1e_5_are_numbers_and_the_largest_is_an_edge(tmp_path):
    """YAML 1.1 reads ``1e-5`` (no decimal point) as text: the choices ran as numbers but were no scale."""
    from pcctune.orchestration.search_space import edge, load_space

    (tmp_path / "space.yaml").write_text("stages.0.learning_rate: {type: categorical, choices: [1e-5, 3e-5, 1e-4]}\n")
    rate = load_space(tmp_path / "space.yaml")["stages.0.learning_rate"]
    assert rate.choices == [1e-5, 3e-5, 1e-4]
    assert edge(1e-4, rate) == "the largest of [1e-05, 3e-05, 0.0001]"


def test_the_sweep_says_when_its_space_may_hold_the_winner_back():
    from pcctune.orchestration.search_space import Distribution
    from pcctune.orchestration.sweep_summary import where_the_winner_sits

    space = {"stages.0.learning_rate": Distribution(type="float", low=1e-5, high=1e-3, log=True)}
    inside = {"stages.0.learning_rate": 1e-4}
    lines, held = where_the_winner_sits(space, inside, [_seed_run(True), _seed_run(False), _seed_run(False)])
    assert not held and lines == ["best at its last dev evaluation in 1 of 3 seed runs"]
    lines, held = where_the_winner_sits(space, inside, [_seed_run(True), _seed_run(True), _seed_run(False)])
    assert held and lines == ["best at its last dev evaluation in 2 of 3 seed runs"]  # still rising in most
    lines, held = where_the_winner_sits(space, {"stages.0.learning_rate": 9e-4}, [_seed_run(False)])
    assert held and lines[0] == "stages.0.learning_rate = 0.0009 sits at the high end (0.001)"
    lines, held = where_the_winner_sits(space, inside, [_seed_run(None)])  # a record from before it was kept
    assert not held and lines == []


def test_a_stage_knows_whether_its_best_checkpoint_was_its_last_dev_evaluation():
    from pcctune.training.checkpoints import best_at_last_evaluation

    metric = "eval_dev_spearman_cosine"
    history = [{"loss": 1.0, "step": 1}, {metric: 0.5, "step": 2}, {metric: 0.6, "step": 4}, {"loss": 0.9, "step": 5}]
    assert best_at_last_evaluation(history, metric, "out/checkpoints/checkpoint-4") is True
    assert best_at_last_evaluation(history, metric, "out/checkpoints/checkpoint-2") is False
    assert best_at_last_evaluation(history, None, "out/checkpoints/checkpoint-4") is None  # no dev set
    assert best_at_last_evaluation(history, metric, None) is None


def test_the_space_plot_draws_each_key_with_its_trials_and_the_winner(tmp_path, monkeypatch):
    import pcctune.orchestration.search_space as search_space
    from pcctune.orchestration.search_space import Distribution, plot_space

    drawn = {}
    saved = search_space.save_figure
    monkeypatch.setattr(
        search_space, "save_figure", lambda figure, path: drawn.update(figure=figure) or saved(figure, path)
    )
    space = {
        "stages.0.learning_rate": Distribution(type="float", low=1e-5, high=1e-3, log=True),
        "stages.0.epochs": Distribution(type="categorical", choices=[1, 2, 4]),
    }
    trials = [
        ({"stages.0.learning_rate": 2e-5, "stages.0.epochs": 1}, 0.80),
        ({"stages.0.learning_rate": 5e-4, "stages.0.epochs": 4}, 0.85),
    ]
    path = plot_space(space, trials, trials[1], tmp_path / "space.png")
    assert path.stat().st_size > 1000
    rate, epochs = drawn["figure"].axes
    assert rate.get_xscale() == "log" and rate.get_title() == "stages.0.learning_rate"
    assert [label.get_text() for label in epochs.get_xticklabels()] == ["1", "2", "4"]
    trial_points, winner = (collection.get_offsets() for collection in epochs.collections)
    assert trial_points.tolist() == [[0, 80.0], [2, 85.0]] and winner.tolist() == [[2, 85.0]]
    wide = {f"stages.0.key{index}": Distribution(type="float", low=0.0, high=1.0) for index in range(5)}
    plot_space(wide, [({key: 0.5 for key in wide}, 0.8)], ({key: 0.5 for key in wide}, 0.8), tmp_path / "wide.png")
    shown = [ax for ax in drawn["figure"].axes if ax.get_visible()]
    assert len(shown) == 5 and len(drawn["figure"].axes) == 8  # two rows of four, the last three panels hidden


def test_grow_trains_the_winner_at_longer_schedules_and_chooses_again_on_dev(sweep_inputs, monkeypatch, capsys):
    import pcctune.orchestration.pipeline as pipeline
    from pcctune.results import BenchmarkResult

    folder = sweep_inputs
    trained: list[str] = []
    real_train = pipeline.Pipeline.train

    def spy(self, *args, **kwargs):
        trained.append(str(self.config.output_dir))
        return real_train(self, *args, **kwargs)

    monkeypatch.setattr(pipeline.Pipeline, "train", spy)
    args = ["sweep", str(folder / "run.yaml"), "--space", str(folder / "space.yaml"), "--trials", "2"]
    args += ["--seeds", "1", "--output", str(folder / "sweep"), "--grow"]
    code, output = run_cli(args, capsys)
    assert code == 0, output
    growth = BenchmarkResult.from_disk(folder / "sweep" / "sweep.json").details["growth"]
    assert growth["key"] == "stages.0.max_steps" and list(growth["scores"])[:4] == ["x1", "x2", "x4", "x4h"]
    first = {label: growth["scores"][label] for label in ("x1", "x2", "x4", "x4h")}
    leader = max(first, key=lambda label: (first[label], -int(label[1:].rstrip("h")), not label.endswith("h")))
    further = {"x4": "x8", "x4h": "x8h"}.get(leader)
    assert list(growth["scores"])[4:] == ([further] if further else [])  # only a leading 4× grows once more
    assert growth["scores"][growth["chosen"]] == max(growth["scores"].values())  # chosen again, the winner too
    best = yaml.safe_load((folder / "sweep" / "best_config.yaml").read_text())
    chosen = growth["chosen"]
    assert best["stages"][0]["max_steps"] == 4 * int(chosen[1:].rstrip("h"))  # the seed runs train the chosen one
    assert any("/grown/x2" in path for path in trained) and any("/grown/x4h" in path for path in trained)
    half = yaml.safe_load((folder / "sweep" / "grown" / "x4h" / "config.yaml").read_text())["stages"][0]
    lr = yaml.safe_load((folder / "sweep" / "grown" / "x4" / "config.yaml").read_text())["stages"][0]["learning_rate"]
    assert (
        half["learning_rate"] == pytest.approx(lr / 2) and half["max_steps"] == 16 and half["warmup_ratio"] in (0, 0.1)
    )
    assert f"chosen {growth['chosen'][1:].rstrip('h')}×" in (folder / "sweep" / "summary.md").read_text()
    trained.clear()
    code, output = run_cli(args, capsys)  # a rerun reads the grown runs back
    assert code == 0 and not trained, output


def test_the_longest_schedule_leading_is_the_sweeps_limit_and_a_grown_key_is_read_from_its_growth():
    from pcctune.orchestration.growth import Growth, Multiple, leading
    from pcctune.orchestration.search_space import Distribution
    from pcctune.orchestration.sweep_summary import where_the_winner_sits

    one, two, four, half = Multiple(1), Multiple(2), Multiple(4), Multiple(4, half_rate=True)
    assert leading({one: 0.80, two: 0.82, four: 0.82}) == two  # the shortest of equals
    assert leading({one: 0.80, half: 0.82, four: 0.82}) == four  # of equals, the one at its own rate
    assert leading({one: 0.80, two: None}) == one  # a run without a score never leads
    assert four.grows_further == Multiple(8) and half.grows_further == Multiple(8, True) and two.grows_further is None
    space = {
        "stages.0.epochs": Distribution(type="categorical", choices=[1, 2, 4]),
        "stages.0.learning_rate": Distribution(type="float", low=1e-5, high=1e-3, log=True),
    }
    params = {"stages.0.epochs": 32, "stages.0.learning_rate": 5e-6}  # 4 at 1e-5, grown to 8× at half the rate
    scores = {"x1": 0.80, "x2": 0.81, "x4": 0.82, "x4h": 0.825, "x8h": 0.83}
    growth = Growth("stages.0.epochs", "stages.0.learning_rate", scores, "x8h")
    lines, held = where_the_winner_sits(space, params, [], growth)  # both values read from the growth, not the space
    assert held and lines == [
        "grown (stages.0.epochs): 1× dev 0.8000; 2× dev 0.8100; 4× dev 0.8200; 4× at half the learning rate dev "
        "0.8250; 8× at half the learning rate dev 0.8300; chosen 8× at half the learning rate: the longest schedule "
        "grown leads, the limit of this sweep"
    ]
    inside = Growth("stages.0.epochs", "stages.0.learning_rate", {"x1": 0.80, "x2": 0.83, "x4": 0.82}, "x2")
    lines, held = where_the_winner_sits(space, {"stages.0.epochs": 8, "stages.0.learning_rate": 1e-5}, [], inside)
    assert held and lines == [  # the rate the search chose is still read against its space
        "stages.0.learning_rate = 1e-05 sits at the low end (1e-05)",
        "grown (stages.0.epochs): 1× dev 0.8000; 2× dev 0.8300; 4× dev 0.8200; chosen 2×",
    ]
    kept = {"x1": 0.83, "x2": 0.82, "x4": 0.81}  # the search's own winner kept: the growth went beyond its schedule
    for epochs, shown in ((4, []), (1, ["stages.0.epochs = 1 sits at the smallest of [1, 2, 4]"])):
        found = Growth("stages.0.epochs", "stages.0.learning_rate", kept, "x1")
        lines, _ = where_the_winner_sits(space, {"stages.0.epochs": epochs, "stages.0.learning_rate": 1e-4}, [], found)
        assert lines[:-1] == shown  # the shortest schedule is still the space's edge; the longest no longer is


def test_a_grown_run_multiplies_the_last_stages_schedule_and_halves_only_its_learning_rate(tmp_path):
    from pcctune.orchestration.growth import FIRST_GROWTH, Growth, Multiple, parse
    from pcctune.training.config import RunConfig

    stage = {"name": "s", "loss": "pearson", "data": {"source": "stage2"}, "epochs": 3, "learning_rate": 6e-5}
    first = {"name": "c", "loss": "infonce", "data": {"source": "snli"}, "epochs": 1, "learning_rate": 1e-4}
    config = RunConfig.model_validate({"model": "m", "output_dir": str(tmp_path), "stages": [first, stage]})
    params = {"stages.1.warmup_ratio": 0.05}
    assert [m.label for m in FIRST_GROWTH] == ["x2", "x4", "x4h"]
    assert Multiple(2).params(params, config) == {"stages.1.warmup_ratio": 0.05, "stages.1.epochs": 6}
    halved = Multiple(4, half_rate=True).params(params, config)
    assert halved == {"stages.1.warmup_ratio": 0.05, "stages.1.epochs": 12, "stages.1.learning_rate": 3e-5}
    assert all(parse(m.label) == m for m in [*FIRST_GROWTH, Multiple(8), Multiple(8, True)])
    growth = Growth.of(config, {Multiple(1): 0.80, Multiple(4): 0.81, Multiple(4, True): 0.82})
    assert growth.chosen == "x4h" and growth.grown_keys() == ["stages.1.epochs", "stages.1.learning_rate"]
    assert not growth.at_limit  # 4× leads: it grows to 8× before the sweep calls a limit
