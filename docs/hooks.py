"""mkdocs hooks (``hooks:`` in mkdocs.yml): text kept elsewhere in the repository, shown in the site with links
that work there.

- ``<!-- citations -->`` on a page becomes the BibTeX of every paper in ``pcctune.losses.citations``, one block
  each, so the entries have one copy: that module, which also puts them into model cards.
- ``<!-- include: PATH -->`` becomes the repository file ``PATH`` without its first line (its title is the page's);
  ``<!-- include: PATH#SLUG -->`` the body of its section under the ``## `` heading ``SLUG`` names (``#results``).
- A code span naming a file or folder of the repository outside the docs folder (`` `tests/test_docs.py` ``,
  `` `reproductions/gpu/` ``) becomes a link to it at ``repo_url``.
- A relative link to a file that is no page of the site (outside the docs folder, or this file) (``../tests/test_docs.py`` on a page, ``gpu/`` inside the
  included ``reproductions/README.md``) resolves on the repository but has no target in the site: it becomes a link
  to that file at ``repo_url``. A link to nothing is left as it is, for the build's link check to report.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pcctune.losses import citations

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BRANCH = "main"
LINK = re.compile(r"(?<!\!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
INCLUDE = re.compile(r"^<!-- include: (?P<path>[^\s#]+)(?:#(?P<section>\S+))? -->$", re.MULTILINE)
CODE_PATH = re.compile(r"(?<!\[)`(?P<path>(?:benchmarks|configs|examples|reproductions|src|tests)/[^`\s:]*)`(?!\])")
EXTERNAL = ("http://", "https://", "mailto:", "#", "/")


def bibtex_blocks() -> str:
    """Every BibTeX entry of ``pcctune.losses.citations``, in the module's order, as titled code blocks."""
    blocks = []
    for name, entry in vars(citations).items():
        if name.isupper() and isinstance(entry, str) and entry.startswith("@"):
            title = " ".join(entry.split("title={", 1)[1].split("}", 1)[0].split())
            blocks.append(f"**{title}**\n\n```bibtex\n{entry}\n```")
    return "\n\n".join(blocks)


def repository_link(target: str, folder: Path, page: Path, repo_url: str) -> str:
    """``target``, written in ``folder`` of the repository, as a link the site can follow from the page ``page``
    (a docs page: relative to it; another file: at ``repo_url``)."""
    if target.startswith(EXTERNAL):
        return target
    path, _, anchor = target.partition("#")
    resolved = (folder / path).resolve()
    if not resolved.is_relative_to(ROOT) or not resolved.exists():
        return target
    if resolved.is_relative_to(DOCS) and resolved.suffix == ".md":  # a page of the site
        return Path(os.path.relpath(resolved, page.parent)).as_posix() + (f"#{anchor}" if anchor else "")
    kind = "tree" if resolved.is_dir() else "blob"
    url = f"{repo_url.rstrip('/')}/{kind}/{BRANCH}/{resolved.relative_to(ROOT).as_posix()}"
    return url + (f"#{anchor}" if anchor else "")


def code_path_link(match: re.Match[str], repo_url: str) -> str:
    """A code span naming an existing repository path, as a link to it; any other left as it is."""
    if not (ROOT / match["path"]).exists():
        return match[0]
    return f"[{match[0]}]({repository_link(match['path'], ROOT, ROOT / 'README.md', repo_url)})"


def rewrite_links(markdown: str, folder: Path, page: Path, repo_url: str) -> str:
    """The links of ``markdown`` (written in ``folder``) outside fenced code blocks, made to work on ``page``."""
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            line = LINK.sub(
                lambda m: f"[{m['text']}]({repository_link(m['target'], folder, page, repo_url)})",
                line,
            )
            line = CODE_PATH.sub(lambda m: code_path_link(m, repo_url), line)
        lines.append(line)
    return "\n".join(lines)


def section(text: str, slug: str) -> str:
    """The body of ``text``'s ``## `` section whose heading has the slug ``slug``, up to the next ``## ``."""
    for part in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        if re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") == slug:
            return body.strip("\n") + "\n"
    raise ValueError(f"no section {slug!r}")


def include(match: re.Match[str], page: Path, repo_url: str) -> str:
    path = ROOT / match["path"]
    text = path.read_text(encoding="utf-8")
    body = section(text, match["section"]) if match["section"] else text.split("\n", 1)[1]
    return rewrite_links(body, path.parent, page, repo_url)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs' hook: fill a page's markers and make its links to repository files work."""
    repo_url = config["repo_url"]
    source = DOCS / page.file.src_path
    markdown = rewrite_links(markdown, source.parent, source, repo_url)
    markdown = INCLUDE.sub(lambda m: include(m, source, repo_url), markdown)
    return markdown.replace("<!-- citations -->", bibtex_blocks())
