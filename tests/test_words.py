"""Everything a user reads is written for users: no words about how the project was made (numbered work sessions or
issues, the place it was made in) and no names of internal documents a user does not have. Raw logs of measured runs
are kept as they were printed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
SCANNED = ["README.md", "mkdocs.yml", "docs", "src", "configs", "tests", "benchmarks", "reproductions", "examples"]
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".txt", ".toml", ".sh", ".cfg", ".csv"}
SKIPPED_DIRS = {"__pycache__", ".pytest_cache"}
FORBIDDEN = re.compile(
    r"\bworkplace\b|\bsessions? #?\d+|\bissues? #?\d+|\bDESIGN\.md\b|\bshared/docs\b",
    re.IGNORECASE,
)


def scanned_files() -> list[Path]:
    """Every text file a user reads (generated build folders and raw ``*.log`` files aside)."""
    files = []
    for entry in SCANNED:
        path = ROOT / entry
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in candidates:
            parts = set(file.relative_to(ROOT).parts)
            if parts & SKIPPED_DIRS or any(p.endswith(".egg-info") for p in parts):
                continue
            if file.is_file() and file.suffix in TEXT_SUFFIXES:
                files.append(file)
    return files


def test_the_scan_covers_the_tree():
    files = scanned_files()
    names = {f.relative_to(ROOT).as_posix() for f in files}
    assert len(files) > 200 and "README.md" in names and "src/pcctune/cli.py" in names
    assert not any(name.endswith(".log") for name in names)


def test_no_process_words_in_what_users_read():
    this = Path(__file__).resolve()
    found = []
    for file in scanned_files():
        if file.resolve() == this:
            continue
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if match := FORBIDDEN.search(line):
                found.append(f"{file.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_pattern_catches_what_it_is_for():
    for text in (
        "where this workplace keeps it",
        "since session 14",
        "Session 20 began",
        "issue 17's sweeps",
        "(issue #28)",
        "see ../shared/docs/DESIGN.md",
    ):
        assert FORBIDDEN.search(text), text
    for text in ("a session that ends", "the issues a user meets", "../shared/data beside the checkout"):
        assert not FORBIDDEN.search(text), text
