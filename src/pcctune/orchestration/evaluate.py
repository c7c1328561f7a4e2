"""``pcctune eval``: build a model, evaluate STS and/or transfer tasks (or a user's own scored pairs), print and save
an ``EvalResult``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from rich.console import Console
from sentence_transformers import SentenceTransformer

from pcctune.cache_entry import remove, resume_folder, writing
from pcctune.console import plain_console
from pcctune.data.cache import senteval_folder
from pcctune.data.pairs import COLUMN_FLAGS, PAIR_SPLIT, Columns, PairSet, load_pair_set
from pcctune.data.sts import STSTask
from pcctune.data.task_selection import TaskChoice, TaskSelection, select_tasks
from pcctune.data.tasks import SEVEN_TASKS, load_test_tasks
from pcctune.data.transfer import TRANSFER_TASKS, TransferTask, load_transfer_task
from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, get_protocol, protocol_data_dir
from pcctune.evaluation.sts import evaluate_sts, score_section
from pcctune.evaluation.tables import ScoreTable, interval_table
from pcctune.evaluation.transfer import DEFAULT_PROBE, PROBE_SEED, Probe, evaluate_transfer
from pcctune.evaluation.transfer import PROBES as PROBES  # the CLI offers them
from pcctune.host_settings import record_settings
from pcctune.io import check_output_file
from pcctune.modeling.adapters import check_adapter_folder, load_adapter_folder
from pcctune.modeling.backends import Backend, use_backend
from pcctune.modeling.build import PoolingName, build_model, resolve_source, saved_template
from pcctune.modeling.cpu_bf16 import warn_if_emulated_bf16
from pcctune.modeling.encoding import EncodeOptions
from pcctune.modeling.fingerprint import computation_key
from pcctune.modeling.prompts import check_prompt_choice, prompt_in_force, use_prompt
from pcctune.modeling.quantization import FOUR_BIT_TYPES, FourBitType
from pcctune.modeling.template import model_template
from pcctune.modeling.vector_store import VectorStore
from pcctune.modeling.weight_files import model_folders
from pcctune.provenance import file_hashes, library_versions
from pcctune.results import EvalResult, TaskScore, TransferScore
from pcctune.seeding import DEFAULT_SEED, check_seed, seeded

Quantization = Literal["none", "saved", FourBitType]
QUANTIZATIONS: tuple[str, ...] = get_args(Quantization)
POOLINGS: tuple[str, ...] = get_args(PoolingName)  # the CLI offers them
BACKENDS: tuple[str, ...] = get_args(Backend)
PairSource = str | Path | Any
"""A user's test set: a .csv / .tsv / .jsonl file, a folder in the Hub's layout, a Hub dataset id or a Dataset."""


def add_scores(
    result: EvalResult,
    sts: list[TaskScore] | None,
    transfer: list[TransferScore] | None,
    probe: Probe = DEFAULT_PROBE,
    probe_seed: int = PROBE_SEED,
    own_pairs: bool = False,
) -> None:
    """Put the scores (rounded headline numbers and full detail) into ``result``, the transfer tasks' with the
    ``probe`` and the ``probe_seed`` of its folds. A kind's ``avg`` is the mean of its seven tasks: some of them, or
    a user's own test sets (``own_pairs``), have none."""
    if sts is not None:
        result.sts = score_section(sts, own_pairs)
        result.sts_detail = sts
    if transfer is not None:
        result.transfer = {t.name: round(t.accuracy, 2) for t in transfer}
        if tuple(t.name for t in transfer) == TRANSFER_TASKS:
            result.transfer["avg"] = round(sum(t.accuracy for t in transfer) / len(transfer), 2)
        result.transfer_detail = transfer
        result.transfer_probe, result.probe_seed = probe, probe_seed


def print_scores(result: EvalResult, console: Console, own_pairs: bool = False) -> None:
    """Print the tables of ``result``'s scores to ``console``; a user's own test sets (``own_pairs``) with each
    score's bootstrap interval."""
    if result.sts_detail is not None and own_pairs:
        interval_table(result.sts_detail, f"Your pairs, {result.protocol} protocol (× 100)").print(console)
    elif result.sts is not None:
        title = f"STS, {result.protocol} protocol (Spearman × 100)"
        ScoreTable.from_rows({result.model: result.sts}, title=title).print(console)
    if result.transfer is not None:
        title = f"Transfer tasks (accuracy, {result.transfer_probe} logistic-regression probe)"
        ScoreTable.from_rows({result.model: result.transfer}, title=title).print(console)


def load_tasks(senteval: Path, selection: TaskSelection, protocol: str) -> tuple[list[STSTask], list[TransferTask]]:
    """The STS tasks (in the protocol's text form) and the transfer tasks of ``selection``."""
    get_protocol(protocol)
    sts = load_test_tasks(protocol_data_dir(senteval, protocol), selection.sts) if selection.sts else []
    return sts, [load_transfer_task(senteval, name) for name in selection.transfer]


def precision(quantization: Quantization) -> dict[str, Any]:
    """``build_model`` arguments for a backbone precision: ``none`` in the weights' dtype (a model saved in
    4-bit, a QLoRA adapter, on its unquantized base, as the authors' ``--load_kbit 16``); ``saved`` as the
    model was saved; ``nf4`` / ``fp4`` in 4-bit on purpose (bitsandbytes, CPU or GPU)."""
    four_bit = {"quant_type": quantization} if quantization in FOUR_BIT_TYPES else None
    return {"quantization": four_bit, "full_precision_base": quantization == "none"}


def eval_model(
    spec: str,
    template: str | None,
    pooling: PoolingName | None,
    max_seq_length: int | None,
    dtype: str,
    quantization: Quantization,
    backend: Backend,
    adapter: Path | None = None,
) -> SentenceTransformer:
    """The model ``pcctune eval`` scores: built as asked, at the asked precision, with ``adapter`` on it, run by
    ``backend``; the adapter folder is checked before any weight loads."""
    if adapter is not None:
        check_adapter_folder(adapter)
        if backend != "torch":
            raise PcctuneError("--adapter runs on the torch backend: export the merged model for onnx / openvino")
    if backend != "torch" and not Path(spec).is_dir():
        raise PcctuneError(
            f"--backend {backend} runs the export in a model folder; {spec} is none: write one with pcctune export "
            f"{spec} --backend {backend} --output FOLDER, then evaluate FOLDER"
        )
    model = build_model(spec, template, pooling, max_seq_length, dtype, **precision(quantization))
    if dtype == "bf16" and model.device.type == "cpu":
        warn_if_emulated_bf16("--dtype bf16")
    if adapter is not None:
        load_adapter_folder(model, adapter)
    return use_backend(model, Path(spec), backend)


def task_files(sts: list[STSTask], transfer: list[TransferTask]) -> list[Path]:
    """Every data file the evaluated tasks read (hashed into the result)."""
    return [*(f for t in sts for f in t.files), *(f for u in transfer for f in u.files)]


def load_pair_sets(
    sources: Sequence[PairSource], columns: Columns | None = None, split: str = PAIR_SPLIT, map_with: str | None = None
) -> list[PairSet]:
    """A user's test sets (``pcctune.data.pairs.load_pair_set``; ``map_with``: the setting that names their columns),
    each named by its file's stem, or by the source as given where two stems are the same."""
    sets = [load_pair_set(source, columns, split, map_with) for source in sources]
    names = [s.name for s in sets]
    for pair_set, source in zip(sets, sources, strict=True):
        if names.count(pair_set.name) > 1 and isinstance(source, str | Path):
            pair_set.name = str(source)
    if len({s.name for s in sets}) < len(sets):
        raise PcctuneError(f"two test sets are named {pair_set.name!r}; give each its own name")
    return sets


def pair_hashes(sets: Sequence[PairSet]) -> dict[str, str]:
    """SHA-256 of the pairs of each set read from a dataset, keyed by its name (a file is hashed with the others)."""
    return {s.name: s.content_sha256 for s in sets if s.content_sha256}


def eval_tasks(
    data: Path | None, tasks: TaskChoice, protocol: str, own: list[PairSet]
) -> tuple[Path | None, list[STSTask], list[TransferTask]]:
    """The SentEval folder (``None`` where your pairs are all that is scored), the STS tasks (your pairs instead of
    the seven, when given) and the transfer tasks ``tasks`` names (``pcctune.data.task_selection``)."""
    get_protocol(protocol)
    selection = select_tasks(tasks)
    if own and selection.sts != SEVEN_TASKS:
        raise PcctuneError(
            "your pairs (--pairs) replace the seven STS tasks: with them, tasks (--tasks) are sts (the default), all, "
            "or sts and transfer task names (sts,MR)"
        )
    senteval = senteval_folder(data) if not own or selection.transfer else None
    if own:
        selection = TaskSelection((), selection.transfer)
    sts_tasks, transfer_tasks = load_tasks(senteval, selection, protocol) if senteval else ([], [])
    return senteval, [s.task() for s in own] or sts_tasks, transfer_tasks


def check_template_for(protocol: str, model_spec: str, template: str | None) -> None:
    """Before any weight loads: refuse a template-only protocol for a model that has no template (a Hub model
    is checked once loaded, by the evaluation itself)."""
    spec = get_protocol(protocol)
    if not spec.requires_template or template is not None:
        return
    source = resolve_source(model_spec)
    if source.origin != "hub":
        spec.check_model(saved_template(source), model_spec)


def run_eval(
    model_spec: str,
    data: Path | None,
    *,
    tasks: TaskChoice = "sts",
    template: str | None = None,
    pooling: PoolingName | None = None,
    dtype: str = "fp32",
    token_budget: int | None = None,
    max_seq_length: int | None = None,
    seed: int = DEFAULT_SEED,
    output: Path | None = None,
    console: Console | None = None,
    protocol: str = DEFAULT_PROTOCOL,
    backend: Backend = "torch",
    quantization: Quantization = "none",
    probe: Probe = DEFAULT_PROBE,
    adapter: Path | None = None,
    pairs: Sequence[PairSource] = (),
    probe_seed: int | None = None,
    columns: Columns | None = None,
    split: str = PAIR_SPLIT,
    prompt: str | None = None,
    prompt_name: str | None = None,
) -> EvalResult:
    """Evaluate ``model_spec`` (with ``adapter``) on ``tasks`` or your own ``pairs`` under its prompt (or ``prompt`` /
    ``prompt_name``) as ``model.encode`` reads it; checked before encoding, written atomically once complete."""
    started = time.perf_counter()
    check_eval_input(model_spec, prompt, prompt_name, seed, probe_seed)
    with writing_output(output):
        own = load_pair_sets(pairs, columns, split, COLUMN_FLAGS) if pairs else []
        senteval, sts_tasks, transfer_tasks = eval_tasks(data, tasks, protocol, own)
        check_template_for(protocol, model_spec, template)
        with seeded(seed):  # a layer the saved model lacks is drawn the same way each time
            model = eval_model(model_spec, template, pooling, max_seq_length, dtype, quantization, backend, adapter)
        use_prompt(model, prompt, prompt_name)  # the model's own default from here on: encoding, key and record
        settings = (template, pooling, dtype, token_budget, max_seq_length, protocol, backend, quantization)
        data_hashes = file_hashes(task_files(sts_tasks, transfer_tasks), senteval) | pair_hashes(own)
        evaluation = {"model": model_spec, "adapter": adapter, "settings": settings, "data": data_hashes}
        folds = PROBE_SEED if probe_seed is None else probe_seed
        with kept_vectors(output, evaluation | {"prompt": prompt_in_force(model)}, model) as store:
            sts, transfer = score_tasks(
                model, sts_tasks, transfer_tasks, token_budget, protocol, probe, store, seed if own else None, folds
            )
            fields = {"protocol": protocol, "dtype": dtype, "quantization": quantization, "seed": seed}
            result = eval_record(model, model_spec, adapter, senteval, data_hashes, started, **fields)
            add_scores(result, sts, transfer, probe, folds, own_pairs=bool(own))
            print_scores(result, console := console or plain_console(), own_pairs=bool(own))
            save_result(result, output, store, console)
    return result


def check_eval_input(
    model_spec: str, prompt: str | None, prompt_name: str | None, seed: int, probe_seed: int | None
) -> None:
    """What an evaluation refuses before it reads anything: a prompt text and a name together, a name the model's
    saved settings lack, a seed the generators do not take."""
    for given in (seed, probe_seed):
        if given is not None:
            check_seed(given)
    check_prompt_choice(prompt, prompt_name, model_spec)


def pooling_mode(model: SentenceTransformer) -> str | None:
    """The pooling mode of ``model``'s Pooling module, ``None`` for a model without one (a single module)."""
    modes = (getattr(module, "pooling_mode", None) for module in model)
    return next((str(mode) for mode in modes if mode is not None), None)


def eval_record(
    model: SentenceTransformer,
    model_spec: str,
    adapter: Path | None,
    senteval: Path | None,
    data_hashes: dict[str, str],
    started: float,
    **settings: Any,
) -> EvalResult:
    """The record of one evaluation before its scores (``add_scores``): the model as built and scored, the data
    files, the library versions and the time since ``started``; ``settings``: the record's other fields."""
    return EvalResult(
        model=model_spec,
        adapter=str(adapter) if adapter is not None else None,
        template=model_template(model),
        prompt=prompt_in_force(model),
        pooling=pooling_mode(model),
        data_dir=str(senteval) if senteval else None,
        data_files_sha256=data_hashes,
        versions=library_versions(),
        **record_settings(),
        wall_time_s=round(time.perf_counter() - started, 2),
        **settings,
    )


@contextlib.contextmanager
def writing_output(output: Path | None) -> Iterator[None]:
    """Check ``output`` before any work, then hold it against other commands until the evaluation ends."""
    if output is None:
        yield
        return
    with writing(check_output_file(output)):
        yield


def score_tasks(
    model: SentenceTransformer,
    sts_tasks: list[STSTask],
    transfer_tasks: list[TransferTask],
    token_budget: int | None,
    protocol: str,
    probe: Probe,
    store: VectorStore | None,
    interval_seed: int | None = None,
    probe_seed: int = PROBE_SEED,
    show_progress: bool = True,
) -> tuple[list[TaskScore] | None, list[TransferScore] | None]:
    """The STS scores (under ``protocol``; with ``interval_seed``, each with its bootstrap interval) and the
    transfer scores (by ``probe``, its folds seeded by ``probe_seed``) of the tasks asked; ``None`` for a group not
    asked. ``show_progress``: the encodings' progress bars."""
    options: EncodeOptions = {"token_budget": token_budget, "store": store, "show_progress": show_progress}
    sts = evaluate_sts(model, sts_tasks, protocol, interval_seed, **options)[0] if sts_tasks else None
    transfer = (
        evaluate_transfer(model, transfer_tasks, token_budget, probe_seed, show_progress, probe, store)
        if transfer_tasks
        else None
    )
    return sts, transfer


def save_result(result: EvalResult, output: Path | None, store: VectorStore | None, console: Console) -> None:
    """Write the result to ``output`` (when asked); then the vectors kept for a resume are no longer needed."""
    if output is not None:
        result.to_disk(output)
        console.print(f"results -> {output}")
    if store is not None:
        remove(store.path.parent)


@contextlib.contextmanager
def kept_vectors(
    output: Path | None, evaluation: dict[str, Any], model: SentenceTransformer
) -> Iterator[VectorStore | None]:
    """With ``--output``, the evaluation's vectors so far, kept in pcctune's cache (``resume/eval-KEY``, never in
    the user's folders) until the results are written: the same command run again after an interrupt or a failure
    encodes only what is missing. Its key: the ``evaluation`` (encoding settings, data files' sha256), ``model``
    as loaded, adapter included (a local folder's by its files' hashes: `pcctune.modeling.weight_files`; not as
    named, so ``./x`` and ``x`` are one model), and the code and machine (`pcctune.modeling.fingerprint`); a model
    that cannot be digested keeps no vectors."""
    named = evaluation["model"]
    settings = {name: value for name, value in evaluation.items() if name not in ("model", "adapter")}
    key = computation_key(settings, model, __name__, read_from=model_folders(named)) if output is not None else None
    if key is None:
        yield None
        return
    made_by = f"pcctune eval {named} --output {output}"
    with resume_folder(f"eval-{key[:24]}", made_by) as folder:
        yield None if folder is None else VectorStore.open(folder / "vectors.npz", key)
