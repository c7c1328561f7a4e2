"""The documentation site builds with ``--strict`` (no warning, no library's log line) and its generated references
cover the code: every name of ``pcctune.__all__``, every CLI command and every config field, with its description, is
in the built site. Its links are checked when it builds (a dead one fails ``make docs``), resolve on the repository
too, and work in the built site opened from disk; the API reference renders the docstrings' sections; the pages
filled from elsewhere in the repository are filled, and name repository files by their paths (the repository has
no public address)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel

import pcctune
from pcctune.cli import app
from pcctune.known_noise import BITSANDBYTES_KERNEL_NOTICE
from pcctune.losses import citations
from pcctune.orchestration.model_card import LOADING
from pcctune.training.config import RunConfig

ROOT = Path(__file__).parents[1]
MARKDOWN_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def build(config: Path, site_dir: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of ``config``, as ``make docs`` runs it."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "--site-dir", str(site_dir)]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built as ``make docs`` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    done = build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    assert BITSANDBYTES_KERNEL_NOTICE not in done.stderr + done.stdout, done.stderr[-3000:]
    return out


def page_html(site: Path, page: str) -> str:
    """The built HTML of a page (``reference/api``; ``""``: the home page)."""
    return (site / f"{page or 'index'}.html").read_text(encoding="utf-8")


def page_text(site: Path, page: str) -> str:
    """The visible text of a built page (tags dropped, entities decoded, whitespace collapsed)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page_html(site, page))).split())


def config_models(model: type[BaseModel] = RunConfig, seen: set[type[BaseModel]] | None = None) -> list[type]:
    """``RunConfig`` and every model nested in its fields."""
    seen = set() if seen is None else seen
    if model in seen:
        return []
    seen.add(model)
    found: list[type] = [model]
    for field in model.model_fields.values():
        for inner in _model_types(field.annotation):
            found += config_models(inner, seen)
    return found


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [t for arg in getattr(annotation, "__args__", ()) for t in _model_types(arg)]


def cli_commands(command: Any = None, prefix: str = "pcctune") -> list[str]:
    """Every command path of the CLI (``pcctune data download``, ...)."""
    command = command or typer.main.get_command(app)
    paths = []
    for name, sub in getattr(command, "commands", {}).items():
        paths.append(f"{prefix} {name}")
        paths += cli_commands(sub, f"{prefix} {name}")
    return paths


def test_every_config_field_has_a_description():
    models = config_models()
    missing = [f"{m.__name__}.{n}" for m in models for n, f in m.model_fields.items() if not f.description]
    assert len(models) >= 7 and not missing, missing


def test_every_public_name_is_in_the_api_reference(site):
    text = page_text(site, "reference/api")
    missing = [name for name in pcctune.__all__ if name not in text]
    assert not missing, missing


def test_every_command_is_in_the_cli_reference(site):
    text = page_text(site, "reference/cli")
    commands = cli_commands()
    assert "pcctune data download" in commands and len(commands) >= 15
    assert [c for c in commands if c not in text] == []


def test_the_cli_reference_has_whole_summaries_and_usage_lines(site):
    text = " ".join(page_text(site, "reference/cli").split())
    command = typer.main.get_command(app)
    for name, sub in command.commands.items():
        summary = " ".join((sub.help or "").strip().split("\n\n")[0].split())
        assert summary in text, name
    assert "pcctune eval [OPTIONS] MODEL" in text and "pcctune compare [OPTIONS] RUNS_A RUNS_B" in text
    assert "{model}" not in text and "console $" not in text


def test_every_config_field_and_its_description_is_in_the_config_reference(site):
    text = page_text(site, "reference/config")
    letters = "".join(text.split())  # descriptions compared without markup and whitespace
    missing = []
    for model in config_models():
        assert model.__name__ in text
        for name, field in model.model_fields.items():
            description = "".join((field.description or "").replace("`", "").split())
            if name not in text or description[:40] not in letters:
                missing.append(f"{model.__name__}.{name}")
    assert not missing, missing


def api_section(site: Path, name: str) -> str:
    """The built HTML of one object's entry in the API reference."""
    raw = page_html(site, "reference/api")
    start = raw.index(f'id="{name}"')
    return raw[start : raw.index('class="doc doc-object doc-', start)]


def test_the_api_reference_renders_parameters_and_examples_as_sections(site):
    loss = api_section(site, "pcctune.losses.pearson.PearsonLoss")
    parameters = loss.split("Parameters:", 1)[1]
    assert "<table" in parameters.split("</table>")[0] and "<code>mini_batch_size</code>" in parameters
    assert "Examples:" in loss and '<div class="highlight"><pre>' in loss.split("Examples:", 1)[1]
    text = page_text(site, "reference/api")
    raw_markup = [m for m in ("Example::", ":func:`", ":class:`", ":data:`", ":mod:`", "Args:") if m in text]
    assert not raw_markup, raw_markup


def test_a_dead_link_fails_the_build(tmp_path):
    """The link check of ``make docs``: the site's own config, on a copy of the pages with one dead link added."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}")
    config = config.replace("  - docs/hooks.py", f"  - {ROOT / 'docs' / 'hooks.py'}")
    config = config.replace("paths: [src]", f"paths: [{ROOT / 'src'}]")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    page = docs / "getting-started.md"
    dead = ["no-such-page.md", "training.md#no-such-heading", "no-such-folder/"]
    page.write_text(page.read_text(encoding="utf-8") + "".join(f"\n[dead]({link})\n" for link in dead))
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert done.returncode != 0, done.stderr[-3000:]
    assert all(any(link.split("#")[-1] in line for line in warnings) for link in dead), warnings


def relative_links(file: Path) -> list[str]:
    """The link targets of a markdown file that point into the repository (outside fenced code blocks)."""
    text = re.sub(r"^(`{3,}).*?^\1", "", file.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return [t for t in MARKDOWN_LINK.findall(text) if not t.startswith(("http://", "https://", "mailto:", "#"))]


def test_every_relative_link_resolves_on_the_repository():
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    dead = []
    for file in files:
        for target in relative_links(file):
            if not (file.parent / target.split("#")[0]).exists():
                dead.append(f"{file.relative_to(ROOT)}: {target}")
    assert len(files) > 20 and not dead, dead


def test_pages_filled_from_the_repository_are_filled(site):
    citing = page_text(site, "citing")
    entries = [v for k, v in vars(citations).items() if k.isupper() and isinstance(v, str) and v.startswith("@")]
    assert len(entries) >= 4 and all(entry.split("{", 1)[1].split(",", 1)[0] in citing for entry in entries)
    raw = page_html(site, "reproductions")
    folders = re.findall(r"<code>reproductions/([a-z_0-9]+)/</code>", raw)
    assert len(folders) >= 15 and all((ROOT / "reproductions" / folder).is_dir() for folder in folders)
    home = page_text(site, "")
    headline = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| Pearson ("))
    cells = " ".join(cell.strip() for cell in headline.strip("|").split("|"))
    assert "pip install" in home and "pcctune.evaluate(" in "".join(home.split()) and cells in home, cells


def test_the_site_works_opened_from_disk_and_links_to_no_repository_address(site):
    """Every link between the built pages names a file that exists (a link to a folder would show its listing
    when the site is opened from disk), and none leads to a repository address. (``404.html`` is for a web server,
    which serves it at any address: its links start at the site's root.)"""
    pages = sorted(page for page in site.rglob("*.html") if page.name != "404.html")
    broken, addresses = [], []
    for page in pages:
        for target in re.findall(r'href="([^"]+)"', page.read_text(encoding="utf-8")):
            if "github.com" in target:
                addresses.append(f"{page.relative_to(site)}: {target}")
            elif not target.startswith(("http://", "https://", "mailto:", "#", "data:")):
                path = (page.parent / html.unescape(target).split("#")[0]).resolve()
                if not path.is_file():
                    broken.append(f"{page.relative_to(site)}: {target}")
    assert len(pages) > 20 and not broken and not addresses, (broken[:10], addresses[:10])


def test_a_link_to_a_repository_file_shows_its_path(tmp_path):
    """In the site, a relative link to a repository file that is no page becomes its path from the repository root
    (after the link's text where that says more); a link to a page stays a link."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import hooks
    finally:
        sys.path.remove(str(ROOT / "docs"))
    page = ROOT / "docs" / "citing.md"
    text = "[CITATION.cff](../CITATION.cff), [the card](model-card.md), [Details](../reproductions/leakage/README.md)"
    rewritten = hooks.rewrite_links(text, page.parent, page)
    assert rewritten == "`CITATION.cff`, [the card](model-card.md), Details (`reproductions/leakage/README.md`)"
    included = hooks.rewrite_links("[gpu/](gpu/) and [a page](../docs/bound.md)", ROOT / "reproductions", page)
    assert included == "`reproductions/gpu/` and [a page](bound.md)"


def test_the_model_card_page_shows_a_card_pcctune_writes(tmp_path):
    """The page's example holds every heading of the section pcctune writes (made here from a record) and its
    loading line."""
    from pcctune.orchestration.model_card import pcctune_section
    from pcctune.results import RunResult

    (tmp_path / "modules.json").write_text('[{"type": "sentence_transformers.models.Transformer"}]')
    stage = {"name": "pcc", "loss": "pearson", "data": {"source": "stage2"}}
    config = RunConfig.model_validate({"model": "all-MiniLM-L6-v2", "stages": [stage]})
    record = RunResult(
        protocol="simcse-senteval",
        data_dir="data",
        seed=1,
        config=config.model_dump(mode="json"),
        sts_by_stage={"before": {"STS12": 70.0, "avg": 70.0}, "pcc": {"STS12": 71.0, "avg": 71.0}},
    )
    section = pcctune_section(config, record, "pcc", None, tmp_path)
    headings = [line for line in section.splitlines() if line.startswith("#")]
    page = (ROOT / "docs" / "model-card.md").read_text(encoding="utf-8")
    assert len(headings) >= 4 and all(heading in page for heading in [*headings, LOADING]), headings
    assert "base_model: sentence-transformers/all-MiniLM-L6-v2" in page and "stage1-pcc/final" in page


def test_docstrings_are_written_in_one_style():
    """Google style, as mkdocstrings is told (``docstring_style: google``): no Sphinx roles or ``::`` literal blocks,
    which the API reference would print as they are."""
    assert "docstring_style: google" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    sphinx = re.compile(r":(?:func|data|class|mod|meth|attr|obj|exc|const):`|\S::$", re.MULTILINE)
    found = [
        f"{path.relative_to(ROOT)}: {match[0]!r}"
        for path in sorted((ROOT / "src" / "pcctune").rglob("*.py"))
        for match in sphinx.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_every_doctest_example_in_the_library_prints_what_its_docstring_says():
    """A docstring's ``>>>`` example is run, and its output must be the one the reference shows."""
    import doctest
    import importlib

    sources = ROOT / "src"
    modules = sorted(p for p in (sources / "pcctune").rglob("*.py") if ">>>" in p.read_text(encoding="utf-8"))
    assert modules
    for path in modules:
        module = importlib.import_module(".".join(path.relative_to(sources).with_suffix("").parts))
        result = doctest.testmod(module, verbose=False, report=False)
        assert result.attempted > 0 and result.failed == 0, path.name
