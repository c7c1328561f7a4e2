"""The stage-2 fine-grained set: STS-B train + SICK-R train, filtered against every test set.

Pcc-tuning (§3, Appendix B) trains stage 2 on 5,398 pairs left from STS-B train (5,749) and
SICK-R train (4,500) after removing pairs that appear in any of the seven test sets. STS-B
scores are 0–5 and SICK-R 1–5; the reference code mixes them unscaled, and ``rescale_sick``
maps SICK to 0–5 with 5·(x−1)/4 instead, as the paper's Limitations section says it did.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pcctune.data.leakage import LeakageFilter, Normalization, SourceReport
from pcctune.data.senteval import load_sick, load_stsb
from pcctune.data.sts import STSPair
from pcctune.data.tasks import STS_TASKS, load_test_tasks
from pcctune.io import write_jsonl


@dataclass(frozen=True)
class SourcedPair:
    """A training pair that remembers which dataset it came from."""

    sentence1: str
    sentence2: str
    score: float
    source: str


@dataclass
class Stage2Set:
    pairs: list[SourcedPair]
    reports: list[SourceReport]
    dev_overlap: SourceReport
    normalization: Normalization
    rescale_sick: bool

    def report_dict(self) -> dict[str, Any]:
        return {
            "normalization": self.normalization.value,
            "rescale_sick": self.rescale_sick,
            "test_sets": [spec.test_set for spec in STS_TASKS.values()],
            "sources": [asdict(r) for r in self.reports],
            "total_kept": len(self.pairs),
            "stsb_dev_overlap_with_tests": asdict(self.dev_overlap),
        }


def rescale_sick_score(score: float) -> float:
    """Map a SICK relatedness score from 1–5 to STS-B's 0–5: 5·(x−1)/4."""
    return 5.0 * (score - 1.0) / 4.0


def _files_state(senteval_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """Every STS and SICK file's path, size and modification time: what a cached set depends on."""
    folders = [senteval_dir / "downstream" / "STS", senteval_dir / "downstream" / "SICK"]
    files = sorted(f for folder in folders if folder.is_dir() for f in folder.rglob("*") if f.is_file())
    return tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)


def build_stage2_set(
    senteval_dir: Path,
    normalization: Normalization = Normalization.exact,
    rescale_sick: bool = False,
) -> Stage2Set:
    """Filter STS-B train and SICK-R train against the seven test sets; report STS-B dev overlap too.

    Built once per data state: a run asks for it when it validates, trains and writes its model cards,
    and each later call with the same files (same sizes and modification times) and settings returns the
    same set. Callers must not change it."""
    folder = senteval_dir.resolve()
    return _build(folder, normalization, rescale_sick, _files_state(folder))


@functools.lru_cache(maxsize=8)
def _build(
    senteval_dir: Path, normalization: Normalization, rescale_sick: bool, files: tuple[tuple[str, int, int], ...]
) -> Stage2Set:
    leakage = LeakageFilter(load_test_tasks(senteval_dir), normalization)
    stsb_kept, stsb_report = leakage.filter("STSBenchmark:train", load_stsb(senteval_dir, "train").pairs)
    sick_kept, sick_report = leakage.filter("SICKRelatedness:train", load_sick(senteval_dir, "train").pairs)
    _, dev_report = leakage.filter("STSBenchmark:dev", load_stsb(senteval_dir, "dev").pairs)
    pairs = [SourcedPair(p.sentence1, p.sentence2, p.score, "stsb") for p in stsb_kept]
    pairs += [
        SourcedPair(p.sentence1, p.sentence2, rescale_sick_score(p.score) if rescale_sick else p.score, "sick")
        for p in sick_kept
    ]
    return Stage2Set(pairs, [stsb_report, sick_report], dev_report, normalization, rescale_sick)


def save_pairs_jsonl(pairs: list[SourcedPair] | list[STSPair], path: str | Path) -> Path:
    """Write pairs as JSON lines (sentence1, sentence2, score[, source]), atomically."""
    return write_jsonl((asdict(pair) for pair in pairs), path)
