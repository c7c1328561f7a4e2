"""mkdocs hooks (``hooks:`` in mkdocs.yml): text kept elsewhere in the repository, shown in the site.

- ``<!-- citations -->`` on a page becomes the BibTeX of every paper in ``pcctune.losses.citations``, one block
  each, so the entries have one copy: that module, which also puts them into model cards.
- ``<!-- include: PATH -->`` becomes the repository file ``PATH`` without its first line (its title is the page's);
  ``<!-- include: PATH#SLUG -->`` the body of its section under the ``## `` heading ``SLUG`` names (``#results``).
- A relative link to a file that is no page of the site (outside the docs folder, or this file)
  (``../tests/test_docs.py`` on a page, ``gpu/`` inside the included ``reproductions/README.md``) resolves in a
  clone of the repository but has no target in the site, and the repository has no public address: it becomes the
  file's path from the repository root, as code (`` `tests/test_docs.py` ``), after the link's text where that
  says something else. A link into an included file that names a page of the site is made relative to the page
  showing it; a link to nothing is left as it is, for the build's link check to report.
- ``<!-- cli-reference -->`` becomes the reference of every command of ``pcctune``, typer's own (what ``typer
  pcctune.cli utils docs`` writes) with each command's summary whole (typer cuts it at 45 characters) and each usage
  line in words, as the commands' help texts name their arguments (``pcctune eval [OPTIONS] MODEL``, where typer
  writes ``$ pcctune eval [OPTIONS] {model}``).
- The docs build imports pcctune, and with it libraries that speak at import time: bitsandbytes logs that an
  optional kernel package is missing, torch warns about its own deprecated internals. Both are quietened for the
  build alone.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

from pcctune.known_noise import known_noise_dropped

# Before pcctune.losses imports torch and bitsandbytes (through peft): bitsandbytes' notice, and the deprecation
# warnings torch raises about its own internals (which mkdocs shows, to warn plugin authors), say nothing here.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.")
with known_noise_dropped():
    from pcctune.losses import citations

import typer  # noqa: E402
from typer.cli import get_docs_for_click  # noqa: E402

from pcctune.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- cli-reference -->"
USAGE = re.compile(r"^\$ (pcctune.*)$", re.MULTILINE)
REQUIRED = re.compile(r"\{(\w+)\}")
DOCS = ROOT / "docs"
LINK = re.compile(r"(?<!\!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
INCLUDE = re.compile(r"^<!-- include: (?P<path>[^\s#]+)(?:#(?P<section>\S+))? -->$", re.MULTILINE)
EXTERNAL = ("http://", "https://", "mailto:", "#", "/")


def bibtex_blocks() -> str:
    """Every BibTeX entry of ``pcctune.losses.citations``, in the module's order, as titled code blocks."""
    blocks = []
    for name, entry in vars(citations).items():
        if name.isupper() and isinstance(entry, str) and entry.startswith("@"):
            title = " ".join(entry.split("title={", 1)[1].split("}", 1)[0].split())
            blocks.append(f"**{title}**\n\n```bibtex\n{entry}\n```")
    return "\n\n".join(blocks)


def whole_summaries(command: typer.core.TyperCommand | typer.core.TyperGroup) -> None:
    """Give ``command`` and every command under it its help's first paragraph, whole, as its summary."""
    command.short_help = " ".join((command.help or "").strip().split("\n\n")[0].split())
    for sub in getattr(command, "commands", {}).values():
        whole_summaries(sub)


def usage_line(match: re.Match[str]) -> str:
    """A usage line of typer's docs (``$ pcctune eval [OPTIONS] {model}``) as plain words: ``pcctune eval [OPTIONS]
    MODEL``."""
    return REQUIRED.sub(lambda name: name[1].upper(), match[1])


def cli_reference() -> str:
    """The reference of every command, from the command-line app itself (``typer.cli.get_docs_for_click``)."""
    command = typer.main.get_command(app)
    whole_summaries(command)
    with typer.Context(command, info_name="pcctune") as context:
        docs = get_docs_for_click(obj=command, ctx=context, name="pcctune", indent=1)
    return USAGE.sub(usage_line, docs.replace("```console\n", "```text\n"))


def site_target(target: str, folder: Path, page: Path) -> str | None:
    """``target``, written in ``folder`` of the repository, as a link the site can follow from the page ``page``;
    ``None`` for a repository file that is no page of the site. External and dead targets are returned as given."""
    if target.startswith(EXTERNAL):
        return target
    path, _, anchor = target.partition("#")
    resolved = (folder / path).resolve()
    if not resolved.is_relative_to(ROOT) or not resolved.exists():
        return target
    if resolved.is_relative_to(DOCS) and resolved.suffix == ".md":  # a page of the site
        return Path(os.path.relpath(resolved, page.parent)).as_posix() + (f"#{anchor}" if anchor else "")
    return None


def repository_path(target: str, folder: Path) -> str:
    """The repository file ``target`` (written in ``folder``) names, from the repository root (``tests/x.py``)."""
    resolved = (folder / target.partition("#")[0]).resolve()
    return resolved.relative_to(ROOT).as_posix() + ("/" if resolved.is_dir() else "")


def rewrite_link(match: re.Match[str], folder: Path, page: Path) -> str:
    """One markdown link, made to work on ``page``: a repository file outside the site becomes its path, as code."""
    target = site_target(match["target"], folder, page)
    if target is not None:
        return f"[{match['text']}]({target})"
    path = repository_path(match["target"], folder)
    named = match["text"].strip("`").rstrip("/")
    if path.startswith(named) or Path(path).name == named:  # the text names the file or its folder
        return f"`{path}`"
    return f"{match['text']} (`{path}`)"


def rewrite_links(markdown: str, folder: Path, page: Path) -> str:
    """The links of ``markdown`` (written in ``folder``) outside fenced code blocks, made to work on ``page``."""
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            line = LINK.sub(lambda m: rewrite_link(m, folder, page), line)
        lines.append(line)
    return "\n".join(lines)


def section(text: str, slug: str) -> str:
    """The body of ``text``'s ``## `` section whose heading has the slug ``slug``, up to the next ``## ``."""
    for part in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        if re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") == slug:
            return body.strip("\n") + "\n"
    raise ValueError(f"no section {slug!r}")


def include(match: re.Match[str], page: Path) -> str:
    path = ROOT / match["path"]
    text = path.read_text(encoding="utf-8")
    body = section(text, match["section"]) if match["section"] else text.split("\n", 1)[1]
    return rewrite_links(body, path.parent, page)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs' hook: fill a page's markers and make its links to repository files work."""
    source = DOCS / page.file.src_path
    markdown = rewrite_links(markdown, source.parent, source)
    markdown = INCLUDE.sub(lambda m: include(m, source), markdown)
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown.replace("<!-- citations -->", bibtex_blocks())
