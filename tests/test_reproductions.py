"""The reproductions of the papers' claims (``reproductions/``): every claim folder has one shape, the runner runs
every claim's ``--quick`` on tiny random models, ``--summarize`` rebuilds each committed table byte for byte from
its records, and every score a README quotes is in its claim's table or records."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reproductions.__main__ import claims, main, script, tables

from pcctune.results import RunResult, load_result
from tests.conftest import one_step_stage2

ROOT = Path(__file__).parents[1]
HERE = ROOT / "reproductions"

SECTIONS = ["## Claim", "## Setup", "## Table", "## Verdict", "## Cost", "## Command"]
VERDICTS = ("held", "not held", "inconclusive", "reference")
NUMBER = re.compile(r"(?<![\w.·])([+−-]?)(\d[\d,]*\.\d+)(?![\w.]*\d)")
FOLDERS = sorted(p for p in HERE.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
RUNNING = {
    f.name
    for f in FOLDERS
    if re.search(rf"\[{f.name}/\]\({f.name}/\).*\| ((running|not run yet)\b[^|]*) \|", (HERE / "README.md").read_text())
}
"""Claims the index marks as running or not run yet: their README, table and records are still being made."""
DONE = [name for name in claims() if name not in RUNNING]


def _run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reproductions", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def test_every_claim_folder_is_in_the_runner_and_the_index():
    index = (HERE / "README.md").read_text()
    listed = [folder.name for folder in FOLDERS if f"({folder.name}/)" not in index]
    assert listed == []
    assert len(claims()) >= 17
    assert set(claims()) <= {folder.name for folder in FOLDERS}


@pytest.mark.parametrize("name", DONE)
def test_claim_folder_has_script_records_table_and_a_readme_in_the_one_shape(name):
    folder = HERE / name
    readme = (folder / "README.md").read_text()
    positions = [readme.find(section) for section in SECTIONS]
    assert -1 not in positions and positions == sorted(positions), f"{name}: sections {SECTIONS} in this order"
    verdict = readme[readme.index("## Verdict") :].split("\n## ")[0]
    assert any(f"**{word}" in verdict.lower() for word in VERDICTS), f"{name}: the verdict names held/not held/…"
    assert "python -m reproductions " + name in readme
    for sub in tables(script(name)):
        assert (folder / sub / "table.md").is_file() and (folder / sub / "runs.json").is_file()
    assert not re.search(r"\b(session|issue) \d+", readme, re.IGNORECASE), f"{name}: history belongs in git log"


def test_the_runner_summarizes_every_committed_table_byte_for_byte(tmp_path):
    done = _run("all", "--summarize", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    for name in DONE:
        for sub in tables(script(name)):
            committed = HERE / name / sub / "table.md"
            assert (tmp_path / name / sub / "table.md").read_bytes() == committed.read_bytes(), committed


def test_a_claim_whose_record_is_committed_is_not_measured_again(tmp_path):
    done = _run("bound", "--output", str(tmp_path), timeout=120)
    assert done.returncode == 0 and "done (its record is committed)" in done.stdout, done.stderr[-2000:]
    assert (tmp_path / "bound" / "table.md").read_bytes() == (HERE / "bound" / "table.md").read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus", "bound"], "unknown claim 'bogus'; choose from all, baselines,"),
        (["all", "bound"], "'all' runs every claim: name no other claim beside it"),
        (["bound", "--summarize", "--rerun"], "argument --rerun: not allowed with argument --summarize"),
        (["bound", "--quick", "--summarize"], "argument --summarize: not allowed with argument --quick"),
        (["bound", "--", "--bogus"], "unrecognized arguments: --bogus"),
        (["bound", "--output", "FILE"], "error: --output FILE/bound: FILE is a file, not a folder"),
    ],
)
def test_the_runner_refuses_bad_input_in_one_line_and_writes_nothing(args, message, tmp_path, capsys):
    file = tmp_path / "a-file"
    file.write_text("kept\n")
    args = [str(file) if arg == "FILE" else arg for arg in args]
    with pytest.raises(SystemExit) as stop:
        main(args)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and message.replace("FILE", str(file)) in err, err
    assert "Traceback" not in err and file.read_text() == "kept\n" and sorted(tmp_path.iterdir()) == [file]
    if "--bogus" in args:  # the claim script's usage line names how it was run
        assert err.startswith("usage: python -m reproductions bound -- "), err


def test_the_runners_help_says_its_first_line_once_and_keeps_its_examples_as_written(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    out = capsys.readouterr().out
    first = "Run, continue or summarize the reproductions of the papers' claims"
    assert stop.value.code == 0 and out.count(first) == 1
    assert "\n    python -m reproductions --list " in out  # the docstring's indented block, indented


def _numbers_of(text: str) -> list[tuple[str, str]]:
    """(sign, number) of every decimal number outside code (fenced blocks and backticks)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    prose = re.sub(r"`[^`]*`", "", prose)
    return [(sign, number.replace(",", "")) for sign, number in NUMBER.findall(prose)]


def _values(data: object) -> list[float]:
    if isinstance(data, bool):
        return []
    if isinstance(data, int | float):
        return [float(data)]
    if isinstance(data, dict):
        return [v for item in data.values() for v in _values(item)]
    if isinstance(data, list):
        return [v for item in data for v in _values(item)]
    return []


def _signed(sign: str, number: str) -> str:
    return f"{sign.replace('-', '−')}{number}"


def _claim_evidence(folder: Path) -> tuple[set[str], list[float]]:
    """The numbers a claim's README may quote: those printed in its tables (signed ones with their sign too), and
    every number in its records."""
    tables_text = " ".join(path.read_text() for path in folder.rglob("*.md") if path.name != "README.md")
    numbers = _numbers_of(tables_text)
    printed = {number for _, number in numbers} | {_signed(sign, number) for sign, number in numbers if sign}
    record_values = [v for path in folder.rglob("*.json") for v in _values(json.loads(path.read_text()))]
    return printed, record_values


def _backed(sign: str, number: str, printed: set[str], nearby: list[float], records: list[float]) -> bool:
    """A signed number must be printed with its sign in a table, or be the difference of two numbers quoted in the
    same paragraph (a reader sees both; any two numbers of the tables would back almost any small difference); an
    unsigned one must be printed, or equal a number of the records at the rounding shown."""
    decimals = len(number.split(".")[1])
    value, unit = float(number), 10.0**-decimals
    if sign:
        signed = _signed(sign, number) in printed
        return signed or any(abs(abs(a - b) - value) <= unit + 1e-9 for a in nearby for b in nearby)
    if number in printed:
        return True
    return any(round(v, decimals) == value or round(v * 100, decimals) == value for v in records)


def _paragraphs(text: str) -> list[str]:
    """Blank-line paragraphs, each list item and each table row on its own."""
    return re.split(r"\n\s*\n|\n(?=- |\|)", text)


def test_a_signed_number_is_backed_by_its_sign_in_a_table_or_by_its_own_paragraph():
    printed = {"80.45", "78.87", "+0.50"}
    assert _backed("+", "0.50", printed, [], [])  # a difference a table prints
    assert not _backed("+", "1.58", printed, [], [])  # 80.45 − 78.87, but neither is quoted beside it
    assert _backed("+", "1.58", printed, [78.87, 80.45, 1.58], [])  # "78.87 → 80.45 (+1.58)"
    assert _backed("−", "1.57", printed, [78.87, 80.45, 1.57], [])  # within the rounding of the quoted numbers
    assert not _backed("+", "1.70", printed, [78.87, 80.45, 1.70], [])
    assert _paragraphs("a\n\nb\n- c\n| d |") == ["a", "b", "- c", "| d |"]


@pytest.mark.parametrize("name", DONE)
def test_every_score_in_a_readme_is_in_its_table_or_records(name):
    """The numbers test: a decimal number in a claim's README is printed in its tables, equals a number of its
    records at the rounding shown, is (signed) the difference of two numbers its paragraph quotes, or is the paper's
    own (quoted in the README's Claim section)."""
    folder = HERE / name
    readme = (folder / "README.md").read_text()
    claim_section = readme[readme.find("## Claim") : readme.find("## Setup")]
    papers = {number for _, number in _numbers_of(claim_section)}
    printed, records = _claim_evidence(folder)
    unbacked = [
        f"{sign}{number}"
        for paragraph in _paragraphs(readme[readme.find("## Setup") :])
        for nearby in [[float(number) for _, number in _numbers_of(paragraph)]]
        for sign, number in _numbers_of(paragraph)
        if number not in papers and not _backed(sign, number, printed, nearby, records)
    ]
    assert unbacked == [], f"{folder.name}/README.md quotes numbers no table or record holds"


def test_run_records_keep_the_pairs_and_data_hashes_of_their_test_sets(tiny_bert, mini_senteval, tmp_path):
    """A run records how many pairs each test task had and the hashes of the files scored (schema 3)."""
    from pcctune.orchestration.library import train
    from pcctune.training.config import RunConfig

    config = RunConfig.model_validate(
        {"model": str(tiny_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / "run")}
        | {"evaluate_before": False, "stages": [one_step_stage2()]}
    )
    result = train(config)
    again = load_result(tmp_path / "run" / "results.json")
    assert isinstance(again, RunResult) and again.schema_version >= 3
    assert again.pairs_by_task == result.pairs_by_task and len(again.pairs_by_task) == 7
    assert all(count > 0 for count in again.pairs_by_task.values())
    assert again.data_files_sha256 and all(len(digest) == 64 for digest in again.data_files_sha256.values())


def test_a_run_record_written_before_pair_counts_loads_and_is_filled_from_the_known_sizes():
    from reproductions._common import pair_counts

    old = RunResult.from_disk(HERE / "minilm_stage2" / "records" / "before_sweep.json")
    assert old.pairs_by_task == {} and old.data_files_sha256 == {}
    assert pair_counts(old) == {
        "STS12": 3108,
        "STS13": 1500,
        "STS14": 3750,
        "STS15": 3000,
        "STS16": 1186,
        "STSBenchmark": 1379,
        "SICKRelatedness": 4927,
    }


def test_a_trained_run_is_kept_as_a_record_and_not_trained_again(tiny_bert, mini_senteval, tmp_path, monkeypatch):
    """Run folders are scratch: each finished run's record is kept under OUTPUT/records and the same run is taken
    from it, while a run-defining change trains again."""
    from reproductions._common import trained_runs

    import pcctune.orchestration.library as library
    from pcctune.training.config import RunConfig

    def config_of(rate: float) -> RunConfig:
        return RunConfig.model_validate(
            {"model": str(tiny_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / "runs" / "pcc")}
            | {"evaluate_before": False, "stages": [one_step_stage2(learning_rate=rate)]}
        )

    first = list(trained_runs([1], ["pcc"], lambda variant, seed: config_of(1e-3), tmp_path / "out"))
    assert (tmp_path / "out" / "records" / "pcc.json").is_file()
    shutil.rmtree(tmp_path / "runs")  # the scratch folders are lost

    class TrainedAgain(Exception):
        pass

    def refuse(*args, **kwargs):
        raise TrainedAgain

    monkeypatch.setattr(library, "train", refuse)
    again = list(trained_runs([1], ["pcc"], lambda variant, seed: config_of(1e-3), tmp_path / "out"))
    assert again[0][3] == first[0][3]
    with pytest.raises(TrainedAgain):  # another learning rate is another run, though its folder has the same name
        list(trained_runs([1], ["pcc"], lambda variant, seed: config_of(2e-3), tmp_path / "out"))


def test_a_kept_run_leaves_its_final_model_and_drops_its_checkpoints(tiny_bert, mini_senteval, tmp_path):
    """A grid's runs keep their record and final model (a transfer evaluation reads it), not the checkpoints that
    only serve a resume."""
    from reproductions._common import train_once

    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    def config_of(folder: str) -> RunConfig:
        return RunConfig.model_validate(
            {"model": str(tiny_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / folder)}
            | {"evaluate_before": False, "stages": [one_step_stage2()]}
        )

    run_pipeline(config_of("plain"), tasks=[])
    assert list((tmp_path / "plain").glob("*/checkpoints/checkpoint-*"))  # what a run leaves by itself
    result = train_once(config_of("kept"), tmp_path / "records" / "kept.json", score=False)
    assert (tmp_path / "records" / "kept.json").is_file() and result.stages
    assert not list((tmp_path / "kept").glob("*/checkpoints"))
    assert list((tmp_path / "kept").glob("*/final/modules.json"))


CLAIM_CONFIGS = sorted(p for p in HERE.rglob("*.yaml") if not p.name.endswith("_space.yaml"))


@pytest.mark.parametrize("path", CLAIM_CONFIGS, ids=lambda p: str(p.relative_to(HERE)))
def test_every_claim_config_validates(path):
    from pcctune.losses.registry import LOSSES
    from pcctune.training.config import load_config

    config = load_config(path)
    assert config.stages and all(stage.loss in LOSSES for stage in config.stages)


def test_the_leakage_grids_transfer_table_and_verdict_read_each_model_against_the_base():
    from reproductions.leakage.report import transfer_verdicts
    from reproductions.leakage.wide_tables import transfer_table

    tasks = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
    scores = {
        "base": dict.fromkeys(tasks, 80.0) | {"avg": 80.0},
        "minilm-sentence-pearson-seed1": dict.fromkeys(tasks, 79.5) | {"avg": 79.5},
        "minilm-pair-cosine_mse-seed2": dict.fromkeys(tasks, 80.25) | {"avg": 80.25},
    }
    lines = transfer_table(scores).splitlines()
    assert lines[2].startswith("| base model | 80.00 |") and lines[2].endswith("| 80.00 | — |")
    assert lines[3].endswith("| 79.50 | -0.50 |") and lines[4].endswith("| 80.25 | +0.25 |")
    sentence, pair = transfer_verdicts(scores)
    assert "transfer, sentence" in sentence and sentence.endswith("pearson -0.50")
    assert "transfer, pair" in pair and pair.endswith("cosine_mse +0.25")
    assert transfer_verdicts({k: v for k, v in scores.items() if k != "base"}) == []


def test_the_leakage_grid_plans_mpnet_last_with_minilms_winners(tmp_path):
    import argparse

    from reproductions.leakage.cells import HERE as GRID
    from reproductions.leakage.cells import LOSSES, MINILM, MPNET, PAIR, SENTENCE, Cell
    from reproductions.leakage.narrow import plan, record_path, winner

    shutil.copytree(GRID / "records", tmp_path / "records", ignore=shutil.ignore_patterns("mpnet-*"))
    args = argparse.Namespace(output=tmp_path, model=None, levels=[SENTENCE, PAIR], losses=list(LOSSES))
    missing = [
        (cell, settings, seed)
        for cell, settings, seed, score in plan(args)
        if not record_path(args, cell, settings, seed, score).is_file()
    ]
    assert [cell.model for cell, _, _ in missing] == [MPNET] * 12
    assert [cell.level for cell, _, _ in missing] == [SENTENCE] * 6 + [PAIR] * 6
    for cell, settings, seed in missing:
        assert cell.loss in ("pearson", "cosine_mse") and seed in (1, 2, 3)
        assert settings == winner(args, Cell(MINILM, cell.level, cell.loss))


def test_the_leakage_grids_parallel_runner_starts_each_job_once_the_records_allow_it(tmp_path, monkeypatch):
    import argparse

    from reproductions.leakage import narrow

    first, second = tmp_path / "first.json", tmp_path / "second.json"

    def ready(args):  # the second job needs the first one's record, as a seed run needs its cell's trials
        if not first.is_file():
            yield "first", Path.write_text, first, "1"
        elif not second.is_file():
            yield "second", Path.write_text, second, "2"

    monkeypatch.setattr(narrow, "ready_jobs", ready)
    narrow.train_missing(argparse.Namespace(jobs=2, max_runs=1, model="tiny"), None)
    assert first.read_text() == "1" and not second.exists()
    narrow.train_missing(argparse.Namespace(jobs=2, max_runs=None, model="tiny"), None)
    assert second.read_text() == "2"


def _write_settings(path: Path) -> None:
    """A parallel job: the CPU speed settings and the thread count it runs under (a module-level function, as a
    spawned process imports it)."""
    import torch

    from pcctune.host_settings import host_settings

    path.write_text(f"{host_settings().said()} | {torch.get_num_threads()}")


def test_a_parallel_job_runs_under_its_parents_cpu_speed_settings_on_its_share_of_the_cores(tmp_path):
    """A job runs on its pool's share of the cores outside its training steps (in them: the next test)."""
    from reproductions._common import run_jobs

    from pcctune.host_settings import HostSettings, using

    found = tmp_path / "settings.txt"
    with using(HostSettings(workers=None, onednn=True)):
        run_jobs(lambda: iter([("job", _write_settings, found)] if not found.exists() else []), jobs=2)
    assert found.read_text() == f"workers, onednn | {max(1, (os.cpu_count() or 1) // 2)}"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a share above the cap needs two cores")
def test_a_training_job_alone_in_a_pool_trains_on_every_core_and_its_record_says_so(tiny_bert, mini_senteval, tmp_path):
    """train_once in a pool worker adds the share's callback to the trainer: a job alone in a pool of two runs its
    steps on every core (outside them, on half), and its stage's record keeps the threads its steps ran on."""
    from reproductions._common import run_jobs, train_once

    from pcctune.training.config import RunConfig

    config = RunConfig.model_validate(
        {"model": str(tiny_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / "run")}
        | {"evaluate_before": False, "stages": [one_step_stage2(max_steps=2)]}
    )
    record = tmp_path / "record.json"
    run_jobs(lambda: iter([("run", train_once, config, record, False)] if not record.exists() else []), jobs=2)
    assert RunResult.from_disk(record).stages[0].torch_threads == [os.cpu_count()]


def _threads_after_the_other_ends(path: Path) -> None:
    """A parallel job that writes its thread count at its start, then, once the job beside it has ended, the count
    its training callback takes as a step begins and gives back as it ends (module-level: a spawned process imports
    it)."""
    import time

    import torch
    from reproductions._core_share import job_callbacks

    first = torch.get_num_threads()
    (path.parent / "started").write_text("")
    callbacks = job_callbacks()
    deadline = time.monotonic() + 60
    while torch.get_num_threads() == first and time.monotonic() < deadline:
        time.sleep(0.2)
        for callback in callbacks:
            callback.on_step_begin(None, None, None)
    in_step = torch.get_num_threads()
    for callback in callbacks:
        callback.on_step_end(None, None, None)
    path.write_text(f"{first} {in_step} {torch.get_num_threads()} {len(callbacks)}")


def _end_once_the_other_started(path: Path) -> None:
    import time

    while not (path.parent / "started").exists():
        time.sleep(0.1)
    path.write_text("done")


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a share changes only where two jobs split the cores")
def test_a_job_left_alone_takes_the_cores_the_job_beside_it_freed(tmp_path):
    """Two jobs at once start on half the cores each; once one ends, the other's next training step runs on every
    core, and what follows the step on half again (where another job may have started)."""
    from reproductions._common import run_jobs

    long, short = tmp_path / "long.txt", tmp_path / "short.txt"
    jobs = [("long", _threads_after_the_other_ends, long), ("short", _end_once_the_other_started, short)]
    run_jobs(lambda: (job for job in jobs if not job[2].exists()), jobs=2)
    cores = os.cpu_count() or 1
    assert long.read_text() == f"{cores // 2} {cores} {cores // 2} 1"


def _write_or_fail(path: Path) -> None:
    """A job that writes its file, or fails where its file's name says so (module-level: a spawned process imports
    it)."""
    with (path.parent / f"tries-{path.name}").open("a") as tries:
        tries.write("x")
    if path.name.startswith("fail"):
        raise ValueError(f"{path.name} fails")
    if path.name.startswith("refuse"):
        raise SystemExit(f"{path.name} refuses")
    if path.name.startswith("die"):
        import os

        os._exit(9)  # a worker killed outright (out of memory, say)
    path.write_text("done")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failing_job_is_reported_and_the_others_still_run(tmp_path, jobs):
    """One failure neither stops the grid nor is retried in the same command; the command ends naming it."""
    from reproductions._common import run_jobs

    paths = [tmp_path / "fail-first", tmp_path / "second", tmp_path / "third"]

    def ready():
        for path in paths:
            if not path.exists():
                yield path.name, _write_or_fail, path

    with pytest.raises(
        SystemExit, match=r"1 job\(s\) failed \(the others ran\): fail-first: ValueError: fail-first fails"
    ):
        run_jobs(ready, jobs=jobs)
    assert (tmp_path / "second").read_text() == "done" == (tmp_path / "third").read_text()
    assert (tmp_path / "tries-fail-first").read_text() == "x"  # started once: still missing, not started again


def test_a_job_that_refuses_is_reported_and_the_others_still_run(tmp_path):
    from reproductions._common import run_jobs

    paths = [tmp_path / "refuse-first", tmp_path / "second"]
    with pytest.raises(SystemExit, match="refuse-first: SystemExit: refuse-first refuses"):
        run_jobs(lambda: ((p.name, _write_or_fail, p) for p in paths if not p.exists()), jobs=1)
    assert (tmp_path / "second").read_text() == "done"


def test_a_worker_that_dies_fails_its_pools_jobs_and_a_fresh_pool_runs_the_rest(tmp_path):
    """A worker killed outright breaks its process pool: the jobs it held are failed, the others run in a new one."""
    from reproductions._common import run_jobs

    paths = [tmp_path / "die-first", tmp_path / "second", tmp_path / "third", tmp_path / "fourth"]
    with pytest.raises(SystemExit, match="die-first: BrokenProcessPool") as stopped:
        run_jobs(lambda: ((p.name, _write_or_fail, p) for p in paths if not p.exists()), jobs=2)
    assert (tmp_path / "tries-die-first").read_text() == "x"
    # the job beside it in the broken pool (second or third, as they finish) failed with it; every other job ran
    assert all(path.exists() or f"{path.name}: BrokenProcessPool" in str(stopped.value) for path in paths[1:])
    assert (tmp_path / "fourth").read_text() == "done"  # started only once a pool had ended: in a fresh one


def test_the_leakage_table_shows_each_trained_model_before_training():
    from reproductions.leakage.cells import MPNET, base_scores
    from reproductions.leakage.report import base_rows

    minilm_only = base_rows([{"model": "minilm"}])
    both = base_rows([{"model": "minilm"}, {"model": "mpnet"}])
    assert len(minilm_only) == 1 and minilm_only[0].startswith("| all-MiniLM-L6-v2 before training | — |")
    assert both[0] == minilm_only[0] and both[1].startswith(f"| {MPNET} before training | — |")
    assert both[1].endswith(f"| {base_scores(MPNET)['avg']:.2f} | — |") and base_scores(MPNET) != base_scores()


def test_holm_cells_give_holms_decision_and_the_simultaneous_interval_and_leave_out_what_cannot_pair():
    from reproductions._difference import difference_cell, holm_cells, holm_note

    from pcctune.evaluation.compare import seed_difference

    def ends(cell: str) -> tuple[float, float]:
        low, high = cell.split("[")[-1].rstrip("]").split(", ")
        return float(low), float(high)

    base = {1: 80.0, 2: 80.1, 3: 79.9}
    strong = {seed: score + 2.0 + 0.01 * seed for seed, score in base.items()}
    weak = {seed: score + (0.3 if seed != 2 else -0.2) for seed, score in base.items()}
    cells = holm_cells({"strong": (base, strong), "weak": (base, weak), "one seed": (base, {1: 81.0})})
    assert set(cells) == {"strong", "weak"}  # one shared seed gives no paired interval: not in the family
    assert cells["strong"].startswith("rejected; ") and cells["weak"].startswith("not rejected; ")
    for name, b in (("strong", strong), ("weak", weak)):
        plain, joint = ends(difference_cell(base, b)), ends(cells[name])
        assert joint[0] < plain[0] and joint[1] > plain[1]  # every interval at 1 − α/2, Holm's last step too
        simultaneous = seed_difference(base, b, confidence=1 - 0.05 / 2)
        assert joint == (round(simultaneous.low, 2), round(simultaneous.high, 2))
    assert ends(cells["strong"])[0] > 0 > ends(cells["weak"])[0]
    assert "Bonferroni 97.5 % simultaneous, family of 2" in holm_note(2) and "1 comparison (" in holm_note(1)
