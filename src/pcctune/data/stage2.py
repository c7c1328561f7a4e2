"""The stage-2 fine-grained set: STS-B train + SICK-R train, filtered against every test set.

Pcc-tuning (§3, Appendix B) trains stage 2 on 5,398 pairs left from STS-B train (5,749) and
SICK-R train (4,500) after removing pairs that appear in any of the seven test sets. STS-B
scores are 0–5 and SICK-R 1–5; the reference code mixes them unscaled, and ``rescale_sick``
maps SICK to 0–5 with 5·(x−1)/4 instead, as the paper's Limitations section says it did.

The paper's filter is the ``pair`` level of ``pcctune.data.leakage``; ``level`` takes any stricter
one, down to ``sentence``, which leaves no sentence of any test set in the training data.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pcctune.data.audit import check_sources, kept_when_done, summarize_source
from pcctune.data.leakage import NEAR_THRESHOLD, PAPER_LEVEL, LeakageLevel, leakage_level, split_clean
from pcctune.data.senteval import borrowed_sick, load_sick, load_stsb, own_sick_dir, sts_dir
from pcctune.data.sts import STSPair, STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.io import write_jsonl
from pcctune.paths import files_state
from pcctune.results import AuditRole

TRAIN_SOURCES = {"STSBenchmark:train": "stsb", "SICKRelatedness:train": "sick"}
DEV_SOURCES = {
    "sick-trial": "SICKRelatedness:trial",  # 491 of 500 pairs are in no test set
    "stsb-dev-filtered": "STSBenchmark:dev",  # 369 of 1,500 pairs are in no test set
}
"""Each built-in dev set, by the name a stage's ``dev`` gives it → the SentEval split it is (``source_task``), named as
the stage-2 set's report checks it: a stage's audit checks it by that name too, so both read one leakage-cache
entry."""


@dataclass(frozen=True)
class SourcedPair:
    """A training pair that remembers which dataset it came from."""

    sentence1: str
    sentence2: str
    score: float
    source: str


@dataclass(frozen=True)
class Stage2Set:
    """The filtered stage-2 pairs and the leakage report that built them; immutable, so one cached set can be
    handed to every caller (each ``report_dict`` call returns a fresh copy)."""

    pairs: tuple[SourcedPair, ...]
    level: LeakageLevel
    rescale_sick: bool
    report_json: str

    def report_dict(self) -> dict[str, Any]:
        """The leakage report: the level that built the set, and every level's counts per source and test set."""
        report: dict[str, Any] = json.loads(self.report_json)
        return report


def rescale_sick_score(score: float) -> float:
    """Map a SICK relatedness score from 1–5 to STS-B's 0–5: 5·(x−1)/4."""
    return 5.0 * (score - 1.0) / 4.0


def build_stage2_set(
    senteval_dir: Path,
    level: LeakageLevel = PAPER_LEVEL,
    rescale_sick: bool = False,
    near_threshold: float = NEAR_THRESHOLD,
) -> Stage2Set:
    """STS-B train + SICK-R train minus every pair a filter at ``level`` flags against the seven test sets.

    ``pair`` is the paper's filter (Appendix B: 991 + 4,407 = 5,398 pairs); the report counts what every
    level would remove, and checks the dev sets (SICK trial, STS-B dev) against the test sets too.
    Built once per data state: each later call with the same files (same sizes and modification times)
    and settings returns the same immutable set. The leakage checks behind it are kept in pcctune's cache
    (``pcctune.data.leakage_cache``), so a later command on the same data reads them instead of checking again:
    at once where the set is built on its own, once the run has trained where a run builds it (a run refused on
    bad input writes nothing: ``pcctune.data.audit.kept_when_done``)."""
    folder = senteval_dir.resolve()
    files = files_state([sts_dir(folder), own_sick_dir(folder), *borrowed_sick(folder)])
    with kept_when_done():
        return _build(folder, leakage_level(level), rescale_sick, near_threshold, files)


def source_task(senteval_dir: Path, source: str) -> STSTask:
    """One SentEval split named as in reports (``STSBenchmark:train``, ``SICKRelatedness:trial``): its pairs and
    files."""
    dataset, split = source.split(":")
    loader = load_stsb if dataset == "STSBenchmark" else load_sick
    return loader(senteval_dir, {"trial": "dev"}.get(split, split))


def source_pairs(senteval_dir: Path, source: str) -> list[STSPair]:
    """The pairs of one SentEval split named as in reports (``source_task``)."""
    return source_task(senteval_dir, source).pairs


@functools.lru_cache(maxsize=8)
def _build(
    senteval_dir: Path,
    level: LeakageLevel,
    rescale_sick: bool,
    near_threshold: float,
    files: tuple[tuple[str, int, int], ...],
) -> Stage2Set:
    tests = load_test_tasks(senteval_dir)
    wanted: list[tuple[str, Sequence[STSPair], AuditRole]] = [
        (s, source_pairs(senteval_dir, s), "train") for s in TRAIN_SOURCES
    ]
    wanted += [(source, source_pairs(senteval_dir, source), "dev") for source in DEV_SOURCES.values()]
    every = check_sources(tests, wanted, near_threshold, keep=False)
    train, dev = every[: len(TRAIN_SOURCES)], every[len(TRAIN_SOURCES) :]
    pairs: list[SourcedPair] = []
    kept_by_source = {}
    for checked in train:
        kept, _ = split_clean(checked.pairs, checked.checks, level)
        short = TRAIN_SOURCES[checked.source]
        kept_by_source[checked.source] = len(kept)
        rescale = rescale_sick and short == "sick"
        pairs += [
            SourcedPair(p.sentence1, p.sentence2, rescale_sick_score(p.score) if rescale else p.score, short)
            for p in kept
        ]
    report = {
        "level": level.value,
        "near_threshold": near_threshold,
        "rescale_sick": rescale_sick,
        "test_sets": {task.name: len(task.pairs) for task in tests},
        "kept_by_source": kept_by_source,
        "total_kept": len(pairs),
        "sources": [summarize_source(checked).model_dump(mode="json") for checked in train],
        "dev_sets": [summarize_source(checked).model_dump(mode="json") for checked in dev],
    }
    return Stage2Set(tuple(pairs), level, rescale_sick, json.dumps(report, ensure_ascii=False))


def save_pairs_jsonl(pairs: Sequence[SourcedPair] | Sequence[STSPair], path: str | Path) -> Path:
    """Write pairs as JSON lines (sentence1, sentence2, score[, source]), atomically."""
    return write_jsonl((asdict(pair) for pair in pairs), path)
