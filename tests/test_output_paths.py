"""Output paths: nothing but regular files is renamed over; modes follow the umask; ``-`` is stdout."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from pcctune.errors import PcctuneError
from pcctune.io import write_json, write_text
from tests.conftest import assert_one_line_error, run_cli


@pytest.fixture()
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_file_gets_the_umask_mode_and_an_overwritten_file_keeps_its_own(tmp_path, umask_022):
    new = write_json({"a": 1}, tmp_path / "new.json")
    assert stat.S_IMODE(new.stat().st_mode) == 0o644
    kept = tmp_path / "kept.json"
    kept.write_text("{}")
    kept.chmod(0o640)
    write_json({"a": 2}, kept)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and '"a": 2' in kept.read_text()


def test_a_fifo_is_written_into_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_symlink_stays_a_link(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_json({"b": 1}, link)
    assert link.is_symlink() and '"b": 1' in target.read_text()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    to_fifo = tmp_path / "to_fifo"
    to_fifo.symlink_to(fifo)
    reader = threading.Thread(target=lambda: fifo.read_bytes())
    reader.start()
    write_text(to_fifo, "x")
    reader.join(timeout=10)
    assert to_fifo.is_symlink() and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_full_device_is_a_clean_error_and_stays_a_device(tmp_path, mini_senteval, capsys):
    full = tmp_path / "full"
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # /dev/full's numbers, in a private folder
    with pytest.raises(PcctuneError, match="No space left on device"):
        write_text(full, "x")
    code, output = run_cli(["data", "stage2", "--data", str(mini_senteval), "--output", str(full)], capsys)
    assert_one_line_error(code, output, "No space left on device")
    assert stat.S_ISCHR(full.stat().st_mode)


def test_output_dash_writes_to_stdout(mini_senteval, capsys):
    code, output = run_cli(["data", "stage2", "--data", str(mini_senteval), "--output", "-"], capsys)
    assert code == 0, output
    assert '"sentence1"' in output
    assert not Path("-").exists()
