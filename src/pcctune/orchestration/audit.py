"""``pcctune data audit``: training pairs checked against test sets at every leakage level.

Sources: the stage-2 sources and the dev sets used for checkpoint selection (the default), pairs files
(``--pairs``), and the training data of every stage of a run config (``--config``: any source a stage
reads, Hub datasets included; triplets are checked as (anchor, positive) and (anchor, negative) pairs).
Test sets: the seven STS test sets, and for a stage of a run config also the test sets of the user's it is filtered
against (its ``leakage_against``, the run's own ``tasks`` among them), as the run filters; or the user's own pairs
files alone (``--against``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pcctune.data.audit import CheckedSource, check_source, near_edge, summarize_source
from pcctune.data.cache import senteval_folder
from pcctune.data.leakage import LEVELS, NEAR_THRESHOLD, NGRAM, TestIndex
from pcctune.data.pairs import PairSet, load_pair_set, pair_file_name, read_pairs_file
from pcctune.data.stage2 import DEV_SOURCES, TRAIN_SOURCES, source_pairs
from pcctune.data.sts import STSPair, STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.io import check_output_file
from pcctune.provenance import file_hashes
from pcctune.results import ROLE_LABELS, AuditResult
from pcctune.training.config import DataConfig, RunConfig, load_config


def _config_sources(config: RunConfig, name: str, senteval: Path) -> list[tuple[str, list[STSPair], DataConfig]]:
    """Each stage's training pairs as the stage reads them, whole (its ``limit`` takes the first pairs after its
    filter, and the run's own audit counts the whole source too), with its data settings (the test sets of the
    user's it is filtered against, the run's own ``tasks`` among them, and its near threshold); preference data is
    skipped: it is built by a model."""
    from pcctune.losses.registry import loss_spec
    from pcctune.training.datasets import read_scored_pairs, triplets

    sources = []
    for stage in config.stages:
        kind = loss_spec(stage.loss).data
        if kind in ("scored", "positives"):
            pairs = [STSPair(p.sentence1, p.sentence2, p.score) for p in read_scored_pairs(stage.data, senteval)]
        elif kind == "triplets":
            rows = triplets(stage.data, senteval)
            pairs = [STSPair(t.anchor, t.positive, 1.0) for t in rows]
            pairs += [STSPair(t.anchor, t.negative, 0.0) for t in rows if t.negative is not None]
        else:
            continue
        sources.append((f"{name}:{stage.name}", pairs, stage.data))
    return sources


class IndexesByStage:
    """The test sets each source is checked against: ``--against``'s files alone, else the seven STS test sets and
    the user's own test sets of the source's stage (one index for each distinct list)."""

    def __init__(self, senteval: Path | None, against: Sequence[Path], near_threshold: float) -> None:
        self.against = bool(against)
        if against:
            self.base = [PairSet(pair_file_name(path), read_pairs_file(path), [path]).task() for path in against]
        else:
            assert senteval is not None
            self.base = load_test_tasks(senteval)
        self.near_threshold = near_threshold
        self.tasks: dict[tuple[tuple[str, ...], float], list[STSTask]] = {}
        self.indexes: dict[tuple[tuple[str, ...], float], TestIndex] = {}

    def __call__(self, data: DataConfig | None = None) -> TestIndex:
        """The index of a stage's ``data`` (its own test sets and near threshold), or of the command's sources."""
        own = () if self.against or data is None else tuple(data.leakage_against)
        threshold = self.near_threshold if data is None else data.near_threshold
        key = (own, threshold)
        if key not in self.indexes:
            self.tasks[key] = [*self.base, *(load_pair_set(entry).task() for entry in own)]
            self.indexes[key] = TestIndex(self.tasks[key], threshold)
        return self.indexes[key]

    def test_sets(self) -> dict[str, int]:
        """Every test set some source was checked against, with its pair count."""
        return {name: count for index in self.indexes.values() for name, count in index.test_sets.items()}

    def files(self) -> list[Path]:
        """Every data file a task read, each once, in the order first read."""
        return list(dict.fromkeys(Path(path) for tasks in self.tasks.values() for task in tasks for path in task.files))


def audit(
    data: Path | None,
    pairs_files: Sequence[Path] = (),
    config: Path | None = None,
    against: Sequence[Path] = (),
    near_threshold: float = NEAR_THRESHOLD,
) -> AuditResult:
    """Check the chosen sources against the test sets at every level; the typed record of what was found."""
    started = time.perf_counter()
    own_sources = bool(pairs_files or config)
    reads_senteval = not own_sources or not against or config is not None  # default sources or tests, or a run
    senteval = senteval_folder(data) if reads_senteval else None
    indexes = IndexesByStage(senteval, against, near_threshold)
    checked: list[CheckedSource] = [check_source(indexes(), str(path), read_pairs_file(path)) for path in pairs_files]
    if config is not None:
        assert senteval is not None
        sources = _config_sources(load_config(config), config.name, senteval)
        checked += [check_source(indexes(data), name, pairs) for name, pairs, data in sources]
    if not own_sources:
        assert senteval is not None
        index = indexes()
        checked += [check_source(index, source, source_pairs(senteval, source)) for source in TRAIN_SOURCES]
        checked += [
            check_source(index, source, source_pairs(senteval, source), "dev") for source in DEV_SOURCES.values()
        ]
    files = [*indexes.files(), *pairs_files]
    return AuditResult(
        test_sets=indexes.test_sets(),
        data_hashes={f"{Path(path).parent.name}/{Path(path).name}": h for path, h in file_hashes(files).items()},
        near_threshold=near_threshold,
        ngram=NGRAM,
        sources=[summarize_source(source) for source in checked],
        near_edge=near_edge(checked, near_threshold),
        seconds=round(time.perf_counter() - started, 2),
    )


def audit_table(record: AuditResult) -> Table:
    """Per source: pairs a filter at each level removes, and pairs with one or both sentences in a test set."""
    table = Table(
        title=f"leakage against {len(record.test_sets)} test sets (near: 3-gram Jaccard ≥ {record.near_threshold})"
    )
    for column in ("source", "pairs", *LEVELS, "1 sentence in test", "2 sentences in test"):
        table.add_column(str(column), justify="left" if column == "source" else "right")
    for source in record.sources:
        label = source.source + ROLE_LABELS[source.role]
        removed = (
            f"{source.removed[level]} ({100 * source.removed[level] / max(source.total, 1):.1f}%)" for level in LEVELS
        )
        in_test = source.sentences_in_test
        table.add_row(label, str(source.total), *removed, str(in_test["1"]), str(in_test["2"]))
    return table


def run_audit(
    data: Path | None,
    pairs_files: Sequence[Path],
    config: Path | None,
    against: Sequence[Path],
    near_threshold: float,
    output: Path,
    console: Console,
) -> AuditResult:
    """``pcctune data audit``: audit, print the table and one example per level, write the JSON record."""
    check_output_file(output)
    record = audit(data, pairs_files, config, against, near_threshold)
    console.print(audit_table(record))
    for source in record.sources[:1]:
        for level, examples in source.examples.items():
            if examples:
                first = examples[0]
                console.print(
                    f"[bold]{level}[/bold] ({source.source}): {first['sentence1']!r} / {first['sentence2']!r}"
                )
    record.to_disk(output)
    console.print(f"audit of {sum(s.total for s in record.sources)} pairs in {record.seconds:.1f} s -> {output}")
    return record
