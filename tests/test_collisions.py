"""Two real processes writing the same thing at once: one whole result, and a clear answer for the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_cache import write_tiny_gguf


@pytest.fixture()
def env(tmp_path) -> dict[str, str]:
    """The processes' environment: a private pcctune cache, offline."""
    return {**os.environ, "PCCTUNE_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 240) -> None:
    """Wait until ``path`` exists (the process has reached its signal point) or the process has ended."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"never reached {path.name}: {process.communicate()[1][-2000:]}")
        time.sleep(0.1)


# Runs `pcctune ARGS` with the scoring step held until the file RELEASE exists (after writing STARTED): the
# command holds its --output for as long as the test needs.
HELD_EVAL = """
import sys, time
from pathlib import Path
import pcctune.orchestration.evaluate as evaluate
started, release = Path(sys.argv[1]), Path(sys.argv[2])
real = evaluate.score_tasks
def held(*args, **kwargs):
    started.write_text("scoring")
    while not release.exists():
        time.sleep(0.1)
    return real(*args, **kwargs)
evaluate.score_tasks = held
from pcctune.cli import main
sys.argv = ["pcctune", *sys.argv[3:]]
main()
"""


def test_two_evaluations_into_the_same_output_end_with_one_whole_file(tiny_bert, shared_senteval, tmp_path, env):
    work = tmp_path / "work"
    work.mkdir()
    command = ["eval", str(tiny_bert), "--data", str(shared_senteval), "--output", str(work / "r.json")]
    started, release = tmp_path / "started", tmp_path / "release"
    first = subprocess.Popen(
        [sys.executable, "-c", HELD_EVAL, str(started), str(release), *command],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(started, first)
        second = subprocess.run(
            [sys.executable, "-m", "pcctune.cli", *command], env=env, capture_output=True, text=True, timeout=300
        )
    finally:
        release.write_text("go")
        _, first_err = first.communicate(timeout=300)
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert second.returncode == 2 and len(lines) == 1, second.stderr
    assert lines[0] == (
        f"error: --output {work / 'r.json'} is being written by another pcctune command; "
        "wait for it to finish or choose another --output"
    )
    assert first.returncode == 0, first_err[-2000:]
    assert set(json.loads((work / "r.json").read_text())["sts"]) >= {"STS12", "avg"}
    assert [p.name for p in work.iterdir()] == ["r.json"]


# Converts the GGUF file argv[1] once both processes are ready (a barrier on files), each conversion held 2 s.
CONVERT = """
import sys, time, os
from pathlib import Path
import pcctune.modeling.gguf as gguf
ready = Path(sys.argv[2])
(ready / str(os.getpid())).write_text("ready")
while len(list(ready.iterdir())) < 2:
    time.sleep(0.05)
real = gguf._dequantize
def slow(path, folder):
    print("converting", flush=True)
    time.sleep(2)
    real(path, folder)
gguf._dequantize = slow
print(gguf.gguf_to_folder(sys.argv[1]))
"""


def test_two_processes_building_the_same_gguf_cache_build_it_once_and_both_use_it(tmp_path, env):
    from pcctune.cache_entry import damage

    gguf_file = write_tiny_gguf(tmp_path / "tiny.gguf")
    ready = tmp_path / "ready"
    ready.mkdir()
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CONVERT, str(gguf_file), str(ready)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in processes]
    assert all(p.returncode == 0 for p in processes), [err[-2000:] for _, err in outputs]
    printed = [out.split() for out, _ in outputs]
    assert sum(words.count("converting") for words in printed) == 1  # built by one, used by both
    folders = {words[-1] for words in printed}
    assert len(folders) == 1
    folder = Path(folders.pop())
    assert damage(folder) is None
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no staging folder or lock file left


# Holds the run lock of argv[1] until the file argv[3] exists (after writing argv[2]).
HOLD_RUN = """
import sys, time
from pathlib import Path
from pcctune.orchestration.run_folder import run_lock
with run_lock(Path(sys.argv[1])):
    Path(sys.argv[2]).write_text("holding")
    while not Path(sys.argv[3]).exists():
        time.sleep(0.05)
"""


def test_a_second_process_writing_the_same_run_folder_is_refused_naming_the_first(tmp_path, env):
    from pcctune.errors import PcctuneError
    from pcctune.orchestration.run_folder import LOCK, run_lock

    out, started, release = tmp_path / "run", tmp_path / "started", tmp_path / "release"
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD_RUN, str(out), str(started), str(release)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(started, first)
        with pytest.raises(PcctuneError, match=f"{out} is in use by process {first.pid}"), run_lock(out):
            raise AssertionError("two processes hold the run folder")
    finally:
        release.write_text("go")
        first.communicate(timeout=60)
    assert first.returncode == 0 and not (out / LOCK).exists()
    with run_lock(out):  # free again
        assert json.loads((out / LOCK).read_text())["pid"] == os.getpid()
