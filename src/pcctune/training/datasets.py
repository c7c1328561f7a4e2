"""The training set of a stage, as the ``datasets.Dataset`` columns its loss expects.

The loss registry (``pcctune.losses.registry``) says which data a loss trains on and how its
labels are scaled; this module reads that data and shapes it:

- ``scored``: columns (sentence1, sentence2, score);
- ``positives``: pairs scored above ``contrastive_threshold`` as (anchor, positive), the
  stage-2 contrastive baseline of Pcc-tuning §4.3;
- ``triplets``: (anchor, positive[, negative]) from SimCSE's csv or SNLI;
- ``preferences``: (x1, x2, x3, x4) ranked by a cross-encoder (``pcctune.training.preference``).

Scored pairs go through the stage's leakage filter (``data.leakage``; unless set, ``pair`` for the stage-2 set, the
paper's filter, and ``normalized`` for a user's own pairs), by the same checks the run's audit counts
(``pcctune.training.audit``); triplets are taken as given.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from datasets import Dataset

from pcctune.data.audit import CheckedSource, check_sources
from pcctune.data.dev import outside_holdout
from pcctune.data.hub import load_hub_dataset
from pcctune.data.leakage import PAPER_LEVEL
from pcctune.data.local import is_local, local_data_files, pair_files_named
from pcctune.data.nli import (
    SNLI_SPLITS,
    Triplet,
    read_simcse_csv,
    read_snli_folder,
    read_snli_regression_pairs,
    snli_files,
    triplets_from_hf_dataset,
)
from pcctune.data.pairs import load_pair_set, pairs_from_hf_dataset, read_pairs_file
from pcctune.data.senteval import borrowed_sick, downstream_dir, load_sick, load_stsb, snli_dir
from pcctune.data.stage2 import SourcedPair, Stage2Set, build_stage2_set
from pcctune.data.sts import STSPair, STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError
from pcctune.losses.registry import LabelScale, loss_spec
from pcctune.paths import FilesState, config_path, files_state
from pcctune.seeding import DEFAULT_SEED
from pcctune.training.config import DataConfig, StageConfig

Scored = TypeVar("Scored", STSPair, SourcedPair)
SOURCE_IDS = {"sick": 1}  # label id of a pair's source for per-source losses; every other source is 0


def source_key(data: DataConfig, senteval_dir: Path) -> tuple[str, Path, FilesState]:
    """What a source's reads and checks depend on: its config, the SentEval folder, and the state of every local
    file they read (its file or folder, a ``hub`` source's local dataset, its ``leakage_against`` files, the
    SentEval data and SICK where the tokenized copy borrows it), so that a file changed between two runs in one
    process is read again."""
    folder = senteval_dir.resolve()
    local = [config_path(file) for file in (data.path, *data.leakage_against) if file]
    if data.name and is_local(data.name):
        local += [Path(data.name).expanduser(), *pair_files_named(data.name)]
    return (
        data.model_dump_json(exclude_unset=True),
        folder,
        files_state([downstream_dir(folder), *borrowed_sick(folder), *local]),
    )


def source_files(stage: StageConfig, senteval_dir: Path) -> list[Path]:
    """The local files ``stage``'s examples are read from, whatever their source: the stage-2 set's STS-B and SICK
    training files, a ``pairs`` or ``simcse_csv`` file, an SNLI folder's files of the splits read, a ``hub``
    source's local file or folder, and the SNLI files of DPO's ``snli`` candidates and of a regression head's NLI
    warm-up (none for a Hub id: its ``revision`` in the config pins it)."""
    data, files = stage.data, []
    if data.source == "stage2":
        files += [*load_stsb(senteval_dir, "train").files, *load_sick(senteval_dir, "train").files]
    elif data.source in ("snli", "snli_regression"):
        folder = config_path(data.path) if data.path else snli_dir(senteval_dir)
        files += snli_files(folder, data.splits)
    elif data.source == "hub" and data.name and is_local(data.name):
        files += local_data_files(Path(data.name).expanduser(), data.data_files)
    elif data.path and config_path(data.path).is_file():
        files.append(config_path(data.path))
    dpo_candidates = stage.loss == "dpo" and stage.dpo.candidates == "snli"
    if dpo_candidates or stage.regression.head_warmup == "nli":  # the head's warm-up reads SNLI as DPO does
        files += snli_files(snli_dir(senteval_dir), SNLI_SPLITS)
    return files


def scored_pairs(data: DataConfig, senteval_dir: Path) -> list[SourcedPair]:
    """The scored pairs of a ``stage2``, ``pairs``, ``snli_regression`` or ``hub`` source, each with its source;
    filtered at ``data.leakage`` (unless ``none``) against every STS test set (the stage-2 set is built so) and
    against the user's own test files (``data.leakage_against``)."""
    return _scored_and_removed(*source_key(data, senteval_dir))[0]


def removed_by_filter(data: DataConfig, senteval_dir: Path) -> int:
    """How many of the source's pairs the leakage filter removed, beyond a ``stage2`` set's own report."""
    return _scored_and_removed(*source_key(data, senteval_dir))[1]


def own_test_files(data: DataConfig) -> list[Path]:
    """The local files of the user's own test sets (``data.leakage_against``): each pair file, and the data files of
    each folder in the Hub's layout (none for a Hub dataset id)."""
    files: list[Path] = []
    for entry in data.leakage_against:
        path = Path(entry).expanduser()
        if is_local(entry):
            files += local_data_files(path) if path.is_dir() else [path]
    return files


def test_tasks_of(data: DataConfig, senteval_dir: Path) -> list[STSTask]:
    """What the source's pairs and its stage's dev set are filtered against: the seven STS test sets and the user's
    own test files."""
    return [*load_test_tasks(senteval_dir), *(load_pair_set(file).task() for file in data.leakage_against)]


def source_name(data: DataConfig) -> str:
    """A source as the config names it, for the log and the record: its file, folder or Hub id (SNLI's splits
    where no folder is given)."""
    if data.source == "hub":
        return f"{data.name}:{data.data_files}" if data.data_files else str(data.name)
    if data.path:
        return data.path
    return f"SNLI {'+'.join(data.splits)}" if data.source in ("snli", "snli_regression") else data.source


def checked_pairs(data: DataConfig, senteval_dir: Path) -> CheckedSource:
    """A scored source's pairs as read, each checked at every leakage level against the seven STS test sets and the
    user's own test files (the stage-2 set, already built against the seven: against the user's files alone). The
    checks are read from pcctune's cache where a run kept them (``pcctune.data.audit.waiting_checks``)."""
    return _checked(*source_key(data, senteval_dir))


@lru_cache(maxsize=4)
def _read(data_json: str, senteval_dir: Path, files: FilesState) -> tuple[SourcedPair, ...]:
    """The source's pairs as read, once for the leakage checks and the filter alike (a file's warnings once)."""
    return tuple(read_scored_pairs(DataConfig.model_validate_json(data_json), senteval_dir))


@lru_cache(maxsize=4)
def _checked(data_json: str, senteval_dir: Path, files: FilesState) -> CheckedSource:
    data = DataConfig.model_validate_json(data_json)
    pairs = [STSPair(p.sentence1, p.sentence2, p.score) for p in _read(data_json, senteval_dir, files)]
    if data.source == "stage2":
        tasks = [load_pair_set(file).task() for file in data.leakage_against]
    else:
        tasks = test_tasks_of(data, senteval_dir)
    if not tasks:
        return CheckedSource(source_name(data), "train", tuple(pairs), ())
    return check_sources(tasks, [(source_name(data), pairs, "train")], data.near_threshold, keep=False)[0]


@lru_cache(maxsize=4)
def _scored_and_removed(data_json: str, senteval_dir: Path, files: FilesState) -> tuple[list[SourcedPair], int]:
    data = DataConfig.model_validate_json(data_json)
    pairs = list(_read(data_json, senteval_dir, files))
    level = data.filter_level
    checks = _checked(data_json, senteval_dir, files).checks
    if level is None or not checks:
        return pairs, 0
    clean = [pair for pair, check in zip(pairs, checks, strict=True) if not check.flagged(level)]
    return clean, len(pairs) - len(clean)


SNLI_PAIRS = f"SNLI {'+'.join(SNLI_SPLITS)}"
"""How the log and the record name SNLI's dev and test pairs (DPO's ``snli`` candidates, a regression head's NLI
warm-up)."""


def snli_pair_checks(data: DataConfig, senteval_dir: Path) -> CheckedSource:
    """SNLI's dev and test pairs (scored 0/1/2: contradiction, neutral, entailment) checked at every level against
    what the stage's filter runs against (the seven STS test sets and the user's own test files)."""
    return _snli_checks(*source_key(data, senteval_dir))


@lru_cache(maxsize=2)
def _snli_checks(data_json: str, senteval_dir: Path, files: FilesState) -> CheckedSource:
    data = DataConfig.model_validate_json(data_json)
    pairs = read_snli_regression_pairs(snli_dir(senteval_dir), SNLI_SPLITS)
    tasks = test_tasks_of(data, senteval_dir)
    return check_sources(tasks, [(SNLI_PAIRS, pairs, "train")], data.near_threshold, keep=False)[0]


def filtered_snli_pairs(stage: StageConfig, senteval_dir: Path) -> list[STSPair]:
    """SNLI's dev and test pairs less what the stage's filter removes: the candidates of DPO's preferences
    (``dpo.candidates: snli``) and the pairs a regression head is first fitted on (``head_warmup: nli``), so that a
    stage at ``sentence`` reads no test sentence there either."""
    checked, level = snli_pair_checks(stage.data, senteval_dir), stage.data.filter_level
    pairs = zip(checked.pairs, checked.checks, strict=True)
    return [pair for pair, check in pairs if level is None or not check.flagged(level)]


def dpo_candidates(stage: StageConfig, scored: Sequence[SourcedPair], senteval_dir: Path) -> list[tuple[str, str]]:
    """The sentence pairs DPO's preferences are drawn from: the stage's scored pairs (through its filter already),
    or SNLI's dev and test pairs through the same filter."""
    if stage.dpo.candidates == "stage2":
        return [(p.sentence1, p.sentence2) for p in scored]
    return [(p.sentence1, p.sentence2) for p in filtered_snli_pairs(stage, senteval_dir)]


def too_few_examples(stage: StageConfig, examples: int, senteval_dir: Path) -> PcctuneError:
    """The error of a stage with fewer examples than one batch, naming the filter that removed pairs of its source,
    how many of how many, and the file."""
    message = f"stage {stage.name!r}: {examples} examples, fewer than batch_size {stage.batch_size}"
    data = stage.data
    if data.filters_training and loss_spec(stage.loss).data != "triplets":
        removed = removed_by_filter(data, senteval_dir)
        if removed:
            total = removed + len(scored_pairs(data, senteval_dir))
            message += (
                f"; the leakage filter ({data.leakage}) removed {removed} of the {total} pairs of "
                f"{source_name(data)} as test pairs (`leakage: none` keeps them)"
            )
    return PcctuneError(message)


def stage2_set(data: DataConfig, senteval_dir: Path) -> Stage2Set:
    """The stage-2 set (STS-B train + SICK-R train) as a stage's ``data`` filters and scales it, with its leakage
    report."""
    return build_stage2_set(senteval_dir, data.filter_level or PAPER_LEVEL, data.rescale_sick, data.near_threshold)


def read_scored_pairs(data: DataConfig, senteval_dir: Path) -> list[SourcedPair]:
    """A scored source's pairs as read, before the leakage filter (the stage-2 set as built: already filtered)."""
    if data.source == "stage2":
        return list(stage2_set(data, senteval_dir).pairs)
    if data.source == "pairs":
        read = read_pairs_file(data.path or "", data.columns or None, map_with="data.columns")
        return [SourcedPair(p.sentence1, p.sentence2, p.score, "pairs") for p in read]
    if data.source == "snli_regression":
        pairs = read_snli_regression_pairs(data.path or snli_dir(senteval_dir), tuple(data.splits))
        return [SourcedPair(p.sentence1, p.sentence2, p.score, "snli") for p in pairs]
    if data.source == "hub":
        pairs = pairs_from_hf_dataset(hub_dataset(data), source=f"Hub dataset {data.name}")
        return [SourcedPair(p.sentence1, p.sentence2, p.score, "hub") for p in pairs]
    raise PcctuneError(f"source {data.source!r} has no scores; use stage2, pairs, snli_regression or hub for this loss")


def triplets(data: DataConfig, senteval_dir: Path) -> list[Triplet]:
    """Stage-1 triplets from SimCSE's csv or an SNLI folder."""
    if data.source == "simcse_csv":
        return read_simcse_csv(data.path or "")
    if data.source == "snli":
        return read_snli_folder(data.path or snli_dir(senteval_dir), tuple(data.splits))
    if data.source == "hub":
        return triplets_from_hf_dataset(hub_dataset(data))
    raise PcctuneError(f"this loss needs triplets (source simcse_csv, snli or hub), not {data.source!r}")


def hub_dataset(data: DataConfig) -> Any:
    """A ``hub`` source's split, its columns renamed to pcctune's (its ``name`` checked with the config)."""
    assert data.name is not None  # DataConfig refuses a hub source without one
    return load_hub_dataset(data.name, data.columns, data.subset, data.split, data.revision, data.data_files)


def contrastive_pairs(pairs: Sequence[Scored], threshold: float, inclusive: bool = False) -> list[Scored]:
    """Pcc-tuning §4.3 baseline: pairs scored above ``threshold`` (or at it, ``inclusive``) become positives.

    The paper says "greater than 4.0" and 1,543 pairs; on the filtered 5,398 pairs with SICK rescaled
    to 0–5 that count comes from ``≥ 4`` (``> 4`` gives 1,328; unscaled, 1,623 and 1,862).
    """
    return [pair for pair in pairs if pair.score > threshold or (inclusive and pair.score == threshold)]


def scale_labels(scores: Sequence[float], scale: LabelScale) -> list[float] | list[int]:
    """Scores as the loss reads them: ``raw``, ÷ the maximum (``unit``) or rounded (``class``)."""
    if scale == "class":
        return [int(round(score)) for score in scores]
    if scale == "unit":
        top = max(scores)
        return [score / top for score in scores]
    return list(scores)


def _columns(stage: StageConfig, senteval_dir: Path, holdout: bool) -> dict[str, list]:
    spec = loss_spec(stage.loss)
    limit = stage.data.limit
    if spec.data == "triplets":
        rows = triplets(stage.data, senteval_dir)[:limit]
        columns: dict[str, list] = {"anchor": [t.anchor for t in rows], "positive": [t.positive for t in rows]}
        if all(t.negative is not None for t in rows):
            columns["negative"] = [t.negative for t in rows]
        return columns
    pairs = scored_pairs(stage.data, senteval_dir)
    if holdout:  # the dev set's held-out share and its twins are never trained on (pcctune.data.dev.outside_holdout)
        pairs = outside_holdout(pairs)
    if spec.data == "positives":
        pairs = contrastive_pairs(pairs, stage.contrastive_threshold, stage.contrastive_rule == ">=")[:limit]
        return {"anchor": [p.sentence1 for p in pairs], "positive": [p.sentence2 for p in pairs]}
    pairs = pairs[:limit]
    scores: list[Any] = list(scale_labels([p.score for p in pairs], spec.labels))
    if spec.labels == "raw_source" or stage.group_by_source:
        scores = [[score, float(SOURCE_IDS.get(p.source, 0))] for score, p in zip(scores, pairs, strict=True)]
    return {"sentence1": [p.sentence1 for p in pairs], "sentence2": [p.sentence2 for p in pairs], "score": scores}


def check_stage_data(stage: StageConfig, senteval_dir: Path) -> None:
    """Read ``stage``'s data as its training will, before anything trains: a source the loss cannot train on, a
    file that does not parse or a set smaller than a batch is one line now. DPO's preferences need a trained
    cross-encoder, built in its stage: here its scored pairs and candidates are read."""
    if loss_spec(stage.loss).data == "preferences":
        dpo_candidates(stage, scored_pairs(stage.data, senteval_dir), senteval_dir)
    else:
        train_dataset(stage, senteval_dir)


def train_dataset(
    stage: StageConfig,
    senteval_dir: Path,
    stage_dir: Path | None = None,
    seed: int = DEFAULT_SEED,
    holdout: bool = False,
) -> Dataset:
    """The columns ``stage.loss`` trains on, less the dev set's held-out share when ``holdout`` (for DPO: neither its
    cross-encoder nor its candidates see that share); at least one full batch of them. DPO's preferences are ranked
    by a cross-encoder trained into ``stage_dir`` (which it then needs)."""
    if loss_spec(stage.loss).data == "preferences":
        from pcctune.training.preference import dpo_dataset

        if stage_dir is None:
            raise PcctuneError(
                f"stage {stage.name!r}: DPO trains its preference model into the stage's folder: give one"
            )

        every = scored = scored_pairs(stage.data, senteval_dir)
        if holdout:
            scored = outside_holdout(every)
        candidates = dpo_candidates(stage, scored, senteval_dir)
        if holdout:
            apart = outside_holdout([STSPair(a, b, 0.0) for a, b in candidates], among=every)
            candidates = [(pair.sentence1, pair.sentence2) for pair in apart]
        dataset = dpo_dataset(stage.dpo, scored, candidates, stage_dir, seed)
    else:
        dataset = Dataset.from_dict(_columns(stage, senteval_dir, holdout))
    if len(dataset) < stage.batch_size:
        raise too_few_examples(stage, len(dataset), senteval_dir)
    return dataset
