"""The Python API's workflows (``import pcctune``): datasets as ``datasets.Dataset``, a template on any loaded
model, an evaluation that returns the typed record, and the whole two-stage run from a config."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetInfo
from sentence_transformers import SentenceTransformer

from pcctune.console import progress_by_default
from pcctune.data.cache import senteval_folder
from pcctune.data.leakage import leakage_level
from pcctune.data.nli import SNLI_SPLITS, read_snli_folder
from pcctune.data.pairs import PAIR_SPLIT, Columns
from pcctune.data.senteval import snli_dir
from pcctune.data.stage2 import build_stage2_set
from pcctune.data.task_selection import TaskChoice
from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL
from pcctune.evaluation.sts import check_loaded_model
from pcctune.evaluation.transfer import DEFAULT_PROBE, Probe
from pcctune.host_settings import with_workers
from pcctune.modeling.dtypes import loaded_dtype_name
from pcctune.modeling.quantization import loaded_quantization
from pcctune.orchestration.evaluate import (
    PairSource,
    add_scores,
    eval_record,
    eval_tasks,
    load_pair_sets,
    pair_hashes,
    score_tasks,
    task_files,
)
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.provenance import file_hashes
from pcctune.results import EvalResult, RunResult
from pcctune.seeding import DEFAULT_SEED, check_seed
from pcctune.training.config import RunConfig, load_config


def stage2_dataset(data: str | Path | None = None, leakage: str = "pair", rescale_sick: bool = False) -> Dataset:
    """Pcc-tuning's stage-2 set (§3, App. B): STS-B train + SICK-R train minus every pair of the seven test
    sets, as columns ``sentence1, sentence2, score`` (what ``PearsonLoss`` reads).
    ``leakage`` is the filter's level (``pair``, the paper's, up to ``sentence``: ``pcctune.data.leakage``).
    The leakage report (every level's counts per source and test set) is ``json.loads(dataset.info.description)``."""
    built = build_stage2_set(senteval_folder(data or None), leakage_level(leakage), rescale_sick)
    columns = {
        "sentence1": [p.sentence1 for p in built.pairs],
        "sentence2": [p.sentence2 for p in built.pairs],
        "score": [p.score for p in built.pairs],
    }
    return Dataset.from_dict(columns, info=DatasetInfo(description=json.dumps(built.report_dict())))


def nli_triplets(data: str | Path | None = None, splits: str | Sequence[str] = SNLI_SPLITS) -> Dataset:
    """SNLI (premise, entailment, contradiction) triplets as columns ``anchor, positive, negative``: stage 1's
    InfoNCE with hard negatives (Pcc-tuning eq. 7) in a plain sentence-transformers trainer."""
    rows = read_snli_folder(snli_dir(senteval_folder(data or None)), splits)
    return Dataset.from_dict(
        {
            "anchor": [t.anchor for t in rows],
            "positive": [t.positive for t in rows],
            "negative": [t.negative for t in rows],
        }
    )


def evaluate(
    model: SentenceTransformer,
    protocol: str = DEFAULT_PROTOCOL,
    data: str | Path | None = None,
    pairs: PairSource | Sequence[PairSource] | None = None,
    columns: Columns | None = None,
    split: str = PAIR_SPLIT,
    seed: int = DEFAULT_SEED,
    workers: int | None = None,
    show_progress_bar: bool | None = None,
    tasks: TaskChoice = "sts",
    probe: Probe = DEFAULT_PROBE,
) -> EvalResult:
    """Score any loaded model on the seven STS tasks under ``protocol``, the transfer tasks (by ``probe``) or some of
    them (``tasks``: as ``pcctune eval --tasks``), or on your own test sets: the record ``pcctune eval`` writes.

    ``pairs``: one or a list of ``.csv`` / ``.tsv`` / ``.jsonl`` files, Hub dataset ids (their ``split``) or
    ``datasets.Dataset`` objects, with columns ``sentence1``, ``sentence2``, ``score`` (any scale) or those
    ``columns`` names (e.g. ``{"score": "label"}``). Each set is scored as STS-B is (Spearman and Pearson × 100)
    with a 95 % paired bootstrap interval drawn with ``seed``; the record's ``sts`` then holds one number per set
    and no average. ``data``: the SentEval folder of the seven tasks. ``workers``: encode on a CPU in that many
    threads of one core each (default: the caller's thread alone, unless ``pcctune.cpu_speedups`` or
    ``PCCTUNE_CPU_SPEEDUPS=1`` says otherwise; docs/speed-settings.md). ``show_progress_bar``: the encoding's
    progress bar on standard error, as ``pcctune eval`` shows it (default: shown when standard error is a terminal or
    sentence-transformers' logger is at INFO; pass ``True`` in a notebook, ``False`` to keep quiet).

    Examples:
        >>> import pathlib, tempfile, pcctune.testing
        >>> with tempfile.TemporaryDirectory() as root:  # a tiny BERT and a miniature SentEval folder, offline
        ...     work = pcctune.testing.tiny_workspace(pathlib.Path(root))
        ...     result = evaluate(pcctune.build_model(str(work.bert)), data=work.senteval)
        >>> sorted(result.sts)  # Spearman × 100 of each task, and their average
        ['SICKRelatedness', 'STS12', 'STS13', 'STS14', 'STS15', 'STS16', 'STSBenchmark', 'avg']
    """
    started = time.perf_counter()
    check_seed(seed)
    check_loaded_model(model, "evaluate")  # before any data is read
    own = load_pair_sets(pair_sources(pairs), columns, split, "columns") if pairs is not None else []
    senteval, sts_tasks, transfer_tasks = eval_tasks(Path(data) if data else None, tasks, protocol, own)
    interval_seed = seed if own else None
    fields = loaded_settings(model) | {"protocol": protocol, "seed": interval_seed}
    data_hashes = file_hashes(task_files(sts_tasks, transfer_tasks), senteval) | pair_hashes(own)
    with with_workers(workers):
        show = progress_by_default() if show_progress_bar is None else show_progress_bar
        scored = score_tasks(
            model, sts_tasks, transfer_tasks, None, protocol, probe, None, interval_seed, show_progress=show
        )
        result = eval_record(model, loaded_name(model), None, senteval, data_hashes, started, **fields)
    add_scores(result, *scored, probe, own_pairs=bool(own))
    return result


def loaded_settings(model: SentenceTransformer) -> dict[str, Any]:
    """The record's ``dtype`` and ``quantization`` of a model handed in loaded: those it was loaded in."""
    return {"dtype": loaded_dtype_name(model), "quantization": loaded_quantization(model)}


def loaded_name(model: SentenceTransformer) -> str:
    """What a loaded model's record calls it: the name or path its backbone was loaded from, else its class."""
    return str(getattr(getattr(model[0], "model", None), "name_or_path", "") or type(model).__name__)


def pair_sources(pairs: PairSource | Sequence[PairSource]) -> list[PairSource]:
    """``evaluate``'s ``pairs`` as a list of sources (one file, folder, Hub id or dataset, or several); an empty
    list refused in one line."""
    if isinstance(pairs, Sequence) and not isinstance(pairs, str) and not pairs:
        raise PcctuneError("pairs is empty; give one or more test sets, or leave it out for the seven STS tasks")
    return [pairs] if isinstance(pairs, str | Path) or not isinstance(pairs, Sequence) else list(pairs)


def train(config: RunConfig | str | Path, **options: Any) -> RunResult:
    """Run every stage of ``config`` (a ``RunConfig`` or a YAML path) as ``pcctune train`` does; ``options``
    are ``run_pipeline``'s (``resume``, ``compare``, ``overwrite``, ``console`` …). The run seeds the global random
    generators with its ``seed``; the caller's states are put back when it returns.

    Examples:
        >>> import pathlib, tempfile, pcctune.testing
        >>> from rich.console import Console
        >>> with tempfile.TemporaryDirectory() as root:  # a tiny BERT and a miniature SentEval folder, offline
        ...     work = pcctune.testing.tiny_workspace(pathlib.Path(root))
        ...     stage = {"name": "pcc", "loss": "pearson", "data": {"source": "stage2"}, "dev": "none"}
        ...     stage |= {"batch_size": 3, "max_steps": 2}  # the miniature STS-B train split holds 3 pairs
        ...     config = RunConfig(model=str(work.bert), data_dir=str(work.senteval), output_dir=f"{root}/run",
        ...                        stages=[stage])
        ...     result = train(config, console=Console(quiet=True))  # the tables of pcctune train, not printed
        ...     saved = sorted(path.name for path in pathlib.Path(root, "run").iterdir())
        >>> list(result.sts_by_stage)  # Spearman × 100 on the seven test sets before training and after the stage
        ['before', 'pcc']
        >>> result.stages[0].loss, "results.json" in saved
        ('pearson', True)
    """
    if not isinstance(config, RunConfig | str | Path):
        raise TypeError(
            f"train takes a RunConfig or the path of a YAML config, not a {type(config).__name__}; from a mapping: "
            "pcctune.train(pcctune.RunConfig.model_validate(mapping))"
        )
    return run_pipeline(config if isinstance(config, RunConfig) else load_config(config), **options)
