"""Everything a user reads is written for users: no words about how the project was made (numbered work sessions or
issues, the place it was made in) and no names of internal documents a user does not have. Raw logs of measured runs
are kept as they were printed. The README, the docs, the code (its help texts and docstrings), the examples and the
configs also read as a library's, not a lab notebook: no account of how runs were queued or cut off, no "this
project's CPUs", no stale "not yet", and no data folder beside a development checkout (``../shared``), which only
the development page names."""

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

LIBRARY_TEXT = ["README.md", "mkdocs.yml", "docs", "src", "examples", "configs"]
DEVELOPMENT_PAGE = "docs/development.md"
LAB_NOTEBOOK = re.compile(
    r"\b(?:decoder|claims) queue\b|\bthis project's\b|\bbetween two sessions\b|\ba session (?:that )?ended\b"
    r"|\bfor the second time\b|\bno such comparison\b|\bnot yet (?:done|run|re-run)\b|\.\./shared/",
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
    assert len(files) > 200 and "README.md" in names and "src/pcctune/cli/app.py" in names
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


def test_the_library_text_reads_as_a_library_not_a_lab_notebook():
    found = []
    for file in scanned_files():
        name = file.relative_to(ROOT).as_posix()
        if name == DEVELOPMENT_PAGE or not any(name == e or name.startswith(e + "/") for e in LIBRARY_TEXT):
            continue
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if match := LAB_NOTEBOOK.search(line):
                found.append(f"{name}:{number}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_lab_notebook_pattern_catches_what_it_is_for():
    for text in (
        "the decoder queue had three things that lived only in runs/",
        "On this project's CPUs (AVX512-BF16, no AMX) bf16 was slower",
        "transformers 5.24, released between two sessions",
        "a session that ended inside them lost all of it",
        "lost all 9 steps it had made, for the second time",
        "no such comparison has been run yet",
        "Not yet done: the table of all-MiniLM-L6-v2",
        "--data ../shared/data",
    ):
        assert LAB_NOTEBOOK.search(text), text
    for text in ("a queue of jobs", "the project's repository", "not yet released", "shared/data beside the checkout"):
        assert not LAB_NOTEBOOK.search(text), text


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
