"""Train/test leakage filter (Pcc-tuning paper, Appendix B).

A training pair (s1, s2) is a duplicate of a test pair (t1, t2) when s1 = t1 and s2 = t2, or
s1 = t2 and s2 = t1, whatever the two gold scores are. Test pairs are those of STS12–16 (all
subsets), the STS-B test split and the SICK-R test split. Matching is exact by default;
whitespace and case normalisation are options, reported in the output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from pcctune.data.sts import STSPair, STSTask


class Normalization(StrEnum):
    """How sentences are compared: exactly, or after folding whitespace and/or case."""

    exact = "exact"
    whitespace = "whitespace"
    case = "case"
    whitespace_case = "whitespace+case"

    def apply(self, text: str) -> str:
        if self in (Normalization.whitespace, Normalization.whitespace_case):
            text = " ".join(text.split())
        if self in (Normalization.case, Normalization.whitespace_case):
            text = text.casefold()
        return text


@dataclass
class SourceReport:
    """What the filter did to one training source."""

    source: str
    total: int
    kept: int
    removed: int
    removed_by_test_set: dict[str, int] = field(default_factory=dict)
    examples: list[dict[str, object]] = field(default_factory=list)


class LeakageFilter:
    """Index of test pairs (both orders) against which training pairs are checked."""

    def __init__(self, test_tasks: Sequence[STSTask], normalization: Normalization = Normalization.exact):
        self.normalization = normalization
        self.test_sets = [task.name for task in test_tasks]
        self._index: dict[tuple[str, str], set[str]] = {}
        for task in test_tasks:
            for pair in task.pairs:
                a, b = normalization.apply(pair.sentence1), normalization.apply(pair.sentence2)
                self._index.setdefault((a, b), set()).add(task.name)
                self._index.setdefault((b, a), set()).add(task.name)

    def matches(self, pair: STSPair) -> list[str]:
        """Names of the test sets containing this pair in either order (empty when clean)."""
        key = (self.normalization.apply(pair.sentence1), self.normalization.apply(pair.sentence2))
        return sorted(self._index.get(key, ()))

    def filter(
        self, source: str, pairs: Iterable[STSPair], max_examples: int = 5
    ) -> tuple[list[STSPair], SourceReport]:
        """Split ``pairs`` into the clean ones and a report of what was removed and why."""
        kept: list[STSPair] = []
        by_test: Counter[str] = Counter()
        examples: list[dict] = []
        total = 0
        for pair in pairs:
            total += 1
            hits = self.matches(pair)
            if not hits:
                kept.append(pair)
                continue
            by_test.update(hits)
            if len(examples) < max_examples:
                examples.append({**asdict(pair), "test_sets": hits})
        report = SourceReport(source, total, len(kept), total - len(kept), dict(sorted(by_test.items())), examples)
        return kept, report
