"""Writes that survive a power cut: files and folders synced to disk, model folders swapped in one step."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import pcctune.io as io
from pcctune.io import atomic_folder, write_text

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")


@pytest.fixture()
def steps(monkeypatch) -> list[tuple[str, str]]:
    """Every ``fsync`` (the path its descriptor names) and every rename, in order."""
    seen: list[tuple[str, str]] = []
    real_fsync, real_rename, real_replace = os.fsync, os.rename, os.replace

    def fsync(handle: int) -> None:
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{handle}")))
        real_fsync(handle)

    def rename(source, target) -> None:
        real_rename(source, target)
        seen.append(("rename", str(target)))

    def replace(source, target) -> None:
        real_replace(source, target)
        seen.append(("rename", str(target)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_an_atomic_write_syncs_the_file_then_its_folder_after_the_rename(tmp_path, steps):
    target = tmp_path / "result.json"
    write_text(target, "{}\n")
    assert [kind for kind, _ in steps] == ["fsync", "rename", "fsync"]
    assert steps[1] == ("rename", str(target)) and steps[2] == ("fsync", str(tmp_path))


def _write_model(folder: Path, tag: str) -> None:
    (folder / "weights.bin").write_text(tag)
    (folder / "sub").mkdir()
    (folder / "sub" / "config.json").write_text(tag)


def test_a_new_folder_has_every_file_and_folder_synced_before_it_appears_and_its_parent_after(tmp_path, steps):
    target = tmp_path / "final"
    with atomic_folder(target) as staging:
        _write_model(staging, "new")
    appeared = steps.index(("rename", str(target)))
    synced = {Path(path).relative_to(staging) for kind, path in steps[:appeared] if kind == "fsync"}
    assert synced == {Path("weights.bin"), Path("sub/config.json"), Path("sub"), Path(".")}
    assert steps[appeared + 1 :] == [("fsync", str(tmp_path))]
    assert (target / "sub" / "config.json").read_text() == "new"


@pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="a one-step swap of two folders")
def test_a_folder_written_over_an_old_one_is_never_missing_or_half_replaced(tmp_path, monkeypatch):
    """After every rename and before every deletion, ``final`` is whole: the old folder or the new one."""
    target = tmp_path / "final"
    target.mkdir()
    _write_model(target, "old")

    def whole() -> str:
        assert target.is_dir(), "the folder is missing"
        tags = {(target / "weights.bin").read_text(), (target / "sub" / "config.json").read_text()}
        assert len(tags) == 1, "the folder is half old, half new"
        return tags.pop()

    def checked(step):
        def run(*args, **kwargs):
            whole()
            step(*args, **kwargs)
            whole()

        return run

    for module, name in ((os, "rename"), (os, "replace"), (io.shutil, "rmtree")):
        monkeypatch.setattr(module, name, checked(getattr(module, name)))
    with atomic_folder(target) as staging:
        _write_model(staging, "new")
    assert whole() == "new" and [p.name for p in tmp_path.iterdir()] == ["final"]  # the old one deleted


def test_where_the_system_cannot_swap_the_old_folder_is_renamed_aside_and_deleted(tmp_path, monkeypatch):
    target = tmp_path / "final"
    target.mkdir()
    _write_model(target, "old")
    monkeypatch.setattr(io, "_swap", lambda first, second: False)
    with atomic_folder(target) as staging:
        _write_model(staging, "new")
    assert (target / "weights.bin").read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["final"]


def test_a_failed_write_keeps_the_old_folder_and_leaves_no_staging(tmp_path):
    target = tmp_path / "final"
    target.mkdir()
    _write_model(target, "old")
    with pytest.raises(RuntimeError), atomic_folder(target) as staging:
        _write_model(staging, "new")
        raise RuntimeError("killed mid-save")
    assert (target / "weights.bin").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["final"]
