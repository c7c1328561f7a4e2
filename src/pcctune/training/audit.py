"""Every source a stage trains or selects on, checked against the test sets before the run's first step.

The training source, each part of the dev set that selects checkpoints, and the candidate pairs of DPO's
preferences go through the checks of ``pcctune data audit`` (``pcctune.data.leakage``, kept between commands in
pcctune's cache: ``pcctune.data.leakage_cache``), against the same test sets as the stage's filter (the seven STS
test sets and the user's own test files, ``leakage_against``):

- scored pairs (``stage2``'s STS-B and SICK-R train, ``pairs``, ``hub``, ``snli_regression``, dev sets and files,
  DPO's ``snli`` candidates) at every level, counted at the level of the stage's filter (``pair`` where it keeps
  them: ``leakage: none``; a dev file at ``normalized`` at least: ``pcctune.data.dev.dev_file_level``), and
  filtered there by the same checks (``pcctune.training.datasets``);
- NLI triplets (``simcse_csv``, ``snli``, a Hub triplet set) as their anchor–positive and anchor–negative pairs, at
  the levels that need no near search (``TestIndex.check_exact``: dictionary look-ups, so SimCSE's 275,601
  triplets are checked in seconds), counted and never filtered.

Each source becomes one ``SourceLeakage`` in the run's record, one line in its log (``audit_line``) and one in the
model card, both saying every level's count (``leakage_summary``). Checks
made here are kept in the cache once the run has trained (``pcctune.data.audit.waiting_checks``), so that a command
that fails on bad input writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pcctune.data.audit import check_sources, count_leakage
from pcctune.data.dev import HOLDOUT, SINGLE_DEV_SETS, dev_entries, dev_file_level
from pcctune.data.leakage import LEVELS, PAPER_LEVEL, LeakageLevel, LevelHits, TestIndex
from pcctune.data.pairs import read_pairs_file
from pcctune.data.stage2 import DEV_SOURCES, TRAIN_SOURCES, source_pairs
from pcctune.data.sts import STSPair
from pcctune.losses.registry import loss_spec
from pcctune.losses.regression import RegressionLoss
from pcctune.results import ROLE_LABELS, AuditRole, SourceLeakage, SourceRole
from pcctune.training.config import StageConfig
from pcctune.training.datasets import (
    SNLI_PAIRS,
    checked_pairs,
    snli_pair_checks,
    source_name,
    test_tasks_of,
    triplets,
)
from pcctune.training.dev import stage_dev_parts

EXACT_LEVELS = (LeakageLevel.pair, LeakageLevel.normalized, LeakageLevel.sentence)
"""The levels a triplet source is checked at: those that need no near search."""


def _entry(
    stage: StageConfig,
    source: str,
    role: SourceRole,
    checks: Sequence[LevelHits],
    level: LeakageLevel | None,
    levels: Sequence[LeakageLevel] = LEVELS,
) -> SourceLeakage:
    """One source's record: counted at the filter's ``level`` (``pair`` where none runs: ``None``) and at each of
    ``levels``."""
    count = count_leakage(checks, level or PAPER_LEVEL, levels)
    return SourceLeakage(
        source=source,
        stage=stage.name,
        role=role,
        level=count.level.value,
        filter=level.value if level else "none",
        pairs=count.pairs,
        test_pairs=count.test_pairs,
        removed=count.test_pairs if level else 0,
        by_task=count.by_task,
        by_level=count.by_level,
    )


def _training(stage: StageConfig, senteval_dir: Path) -> list[SourceLeakage]:
    """The stage's training pairs: each stage-2 source as read (before the set was built from it), else the source's
    pairs with the checks its filter ran on."""
    data = stage.data
    if data.source != "stage2":
        return [_entry(stage, source_name(data), "train", checked_pairs(data, senteval_dir).checks, data.filter_level)]
    train: AuditRole = "train"
    wanted = [(source, source_pairs(senteval_dir, source), train) for source in TRAIN_SOURCES]
    checked = check_sources(test_tasks_of(data, senteval_dir), wanted, data.near_threshold, keep=False)
    return [_entry(stage, c.source, "train", c.checks, data.filter_level) for c in checked]


def _triplets(stage: StageConfig, senteval_dir: Path) -> SourceLeakage:
    """A triplet source as its anchor–positive and anchor–negative pairs, checked without the near search."""
    data = stage.data
    rows = triplets(data, senteval_dir)[: data.limit]
    pairs = [(t.anchor, t.positive) for t in rows] + [(t.anchor, t.negative) for t in rows if t.negative is not None]
    checks = TestIndex(test_tasks_of(data, senteval_dir), data.near_threshold).check_exact(pairs)
    return _entry(stage, source_name(data), "train", checks, None, EXACT_LEVELS)


def _dev(stage: StageConfig, senteval_dir: Path) -> list[SourceLeakage]:
    """Each built-in set or file of the dev set that selects the stage's checkpoints (a held-out share is part of the
    training pairs, counted there)."""
    if stage.dev == "none":
        return []
    data, used = stage.data, stage_dev_parts(stage, senteval_dir)
    sources: list[tuple[str, list[STSPair], LeakageLevel | None]] = []
    for entry in dev_entries(stage.dev):
        if entry in SINGLE_DEV_SETS and entry in used:  # the built-in sets promise no test pair: at least `pair`
            sources.append((entry, SINGLE_DEV_SETS[entry](senteval_dir).pairs, data.filter_level or PAPER_LEVEL))
        elif entry not in SINGLE_DEV_SETS and entry != HOLDOUT:
            sources.append((entry, read_pairs_file(entry), dev_file_level(data.filter_level)))
    dev: AuditRole = "dev"
    wanted = [(DEV_SOURCES.get(name, name), pairs, dev) for name, pairs, _ in sources]
    checked = check_sources(test_tasks_of(data, senteval_dir), wanted, data.near_threshold, keep=False)
    return [_entry(stage, name, "dev", c.checks, level) for (name, _, level), c in zip(sources, checked, strict=True)]


def stage_audit(stage: StageConfig, senteval_dir: Path) -> list[SourceLeakage]:
    """Every source ``stage`` trains or selects on, checked against the test sets its filter runs against."""
    kind = loss_spec(stage.loss).data
    if kind == "triplets":
        entries = [_triplets(stage, senteval_dir)]
    else:
        entries = _training(stage, senteval_dir)
    roles = _snli_roles(stage)
    if roles:
        checks = snli_pair_checks(stage.data, senteval_dir).checks
        entries += [_entry(stage, SNLI_PAIRS, role, checks, stage.data.filter_level) for role in roles]
    return entries + _dev(stage, senteval_dir)


def _snli_roles(stage: StageConfig) -> list[SourceRole]:
    """What the stage takes SNLI's scored pairs for: DPO's candidate pairs, the regression head's NLI warm-up."""
    spec = loss_spec(stage.loss)
    uses: list[tuple[SourceRole, bool]] = [
        ("dpo", spec.data == "preferences" and stage.dpo.candidates == "snli"),
        ("head", stage.regression.head_warmup == "nli" and issubclass(spec.cls, RegressionLoss)),
    ]
    return [role for role, used in uses if used]


def leakage_summary(entry: SourceLeakage) -> str:
    """What the checks found in one source, said alike in the log and the model card: its test pairs at the level
    counted and the test sets they are in, then every other level's count, so that test pairs the filter's level
    lets through are never hidden, and what became of them; e.g. ``0 of 8 pairs are test pairs at pair; 7 at
    normalized, 7 at near, 8 at sentence``."""
    tasks = ", ".join(f"{task} {count:,}" for task, count in entry.by_task.items() if count)
    line = f"{entry.test_pairs:,} of {entry.pairs:,} pairs are test pairs at {entry.level}"
    line += f" ({tasks})" if tasks else ""
    others = [f"{count:,} at {level}" for level, count in entry.by_level.items() if level != entry.level]
    line += f"; {', '.join(others)}" if others else ""
    if LeakageLevel.near.value not in entry.by_level:  # checked without the near search: triplets
        return f"{line}; triplets are trained on as they are"
    if entry.filter == "none":
        return f"{line}; kept (leakage: none)" if entry.test_pairs else line
    return f"{line}; {entry.removed:,} removed" if entry.removed else line


def audit_line(entry: SourceLeakage) -> str:
    """The log's line of one source, e.g. ``stage pcc: my.csv: 200 of 216 pairs are test pairs at normalized
    (STS12 200); 200 at pair, 200 at near, 216 at sentence; 200 removed``."""
    return f"stage {entry.stage}: {entry.source}{ROLE_LABELS[entry.role]}: {leakage_summary(entry)}"
