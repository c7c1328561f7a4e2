"""The ``pcctune`` command line: a thin door onto the orchestration layer.

Exit codes (docs/reliability.md): 0 success; 2 bad input or usage, one ``error:`` line saying
what is wrong and how to fix it; 1 an unexpected internal error, one line pointing to
``--debug`` / ``PCCTUNE_DEBUG=1`` for the traceback; 130 interrupted, one line saying what was
kept and how to continue. Heavy libraries are imported inside the commands, so ``--help`` is fast.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from pcctune.console import plain_console
from pcctune.errors import Interrupted, PcctuneError
from pcctune.host_settings import command_line, using
from pcctune.known_noise import known_noise_dropped
from pcctune.orchestration.data import DEFAULT_PROTOCOL, NEAR_THRESHOLD, PAIR_SPLIT, PROTOCOLS, LeakageLevel
from pcctune.seeding import BOOTSTRAP_SEED, DEFAULT_SEED

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: no type column ("--help <bool>")
    help="Train, evaluate and compare sentence embeddings for STS (Pcc-tuning and its baselines).",
)
data_app = typer.Typer(no_args_is_help=True, help="Prepare and inspect data (stage-2 set, leakage reports).")
app.add_typer(data_app, name="data")
cache_app = typer.Typer(no_args_is_help=True, help="List and remove what pcctune keeps in its cache ($PCCTUNE_CACHE).")
app.add_typer(cache_app, name="cache")


def _show_version(value: bool) -> None:
    if value:
        from pcctune import __version__

        console.print(f"pcctune {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Train, evaluate and compare sentence embeddings for STS (Pcc-tuning and its baselines)."""


console = plain_console()
DEBUG_ENV = "PCCTUNE_DEBUG"

DataOption = Annotated[
    Path | None,
    typer.Option(
        "--data", help="SentEval folder (or a root holding senteval/); default $PCCTUNE_DATA, else the cached copy"
    ),
]
ModelArgument = Annotated[str, typer.Argument(help="packaged short name, local folder, .gguf file or Hub id")]
TemplateOption = Annotated[str | None, typer.Option(help="eol | sth | sum | a string with one {text}")]
SplitOption = Annotated[str | None, typer.Option(help=f"--pairs: the split of a Hub dataset [default: {PAIR_SPLIT}]")]
PoolingOption = Annotated[str | None, typer.Option(help="mean | cls | lasttoken (default: saved, else by model kind)")]
PromptOption = Annotated[
    str | None, typer.Option(help='prompt text before every sentence, as model.encode(prompt=...); "" for none')
]
PromptNameOption = Annotated[
    str | None, typer.Option(help="one of the model's saved prompts (default: its default_prompt_name)")
]


def _pooling(value: str | None) -> Any:
    from pcctune.orchestration.evaluate import POOLINGS

    if value is not None:
        _check_choice("pooling", value, POOLINGS)
    return value


def _backend(value: str) -> Any:
    from pcctune.orchestration.evaluate import BACKENDS

    _check_choice("backend", value, BACKENDS)
    return value


QuantizationOption = Annotated[
    str, typer.Option(help="none (a QLoRA model on its unquantized base, as the authors) | saved | nf4 | fp4 (4-bit)")
]
ProbeOption = Annotated[
    str, typer.Option(help="transfer probe: sklearn (fast) | senteval (SentEval's own, the papers' numbers)")
]
ProbeSeedOption = Annotated[
    int | None, typer.Option(help="seeds the sklearn probe's cross-validation folds (default: SentEval's)")
]


TokenBudgetOption = Annotated[
    int | None, typer.Option(min=16, help="padded tokens per encoding batch, texts sorted by token length")
]
EvalBackendOption = Annotated[
    str, typer.Option(help="torch | onnx | openvino (a folder written by `pcctune export --backend`)")
]
AdapterOption = Annotated[
    Path | None, typer.Option(help="a LoRA adapter folder to put on MODEL first (pcctune export --adapter-only)")
]
PairsOption = Annotated[
    list[str] | None,
    typer.Option(
        help="your own test set instead of the seven STS tasks: a .csv/.tsv/.jsonl file or a Hub dataset id "
        "with sentence1, sentence2, score columns (any score range), scored with a 95 % bootstrap interval seeded by "
        "--seed; repeatable"
    ),
]


def _check_choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise PcctuneError(f"unknown {what} {value!r}; choose from {', '.join(allowed)}")


def _own_pairs(pairs: list[str] | None, split: str | None, **names: str | None) -> dict[str, Any]:
    """``run_eval``'s arguments for ``--pairs``: the sources, the columns named (pcctune's column → the file's; they
    need ``--pairs``) and the Hub split."""
    columns = {role: name for role, name in names.items() if name is not None}
    if columns and not pairs:
        raise PcctuneError("the column options name the columns of --pairs files; pass --pairs FILE")
    if split is not None and not pairs:
        raise PcctuneError("--split names the split of a --pairs Hub dataset; pass --pairs NAME")
    return {"pairs": pairs, "columns": columns, **({"split": split} if split else {})} if pairs else {}


KEPT_VECTORS = "; the vectors encoded so far are kept in pcctune's cache: run the same command to continue"


def _eval_choices(tasks: str, quantization: str, probe: str) -> dict[str, Any]:
    """``--tasks``, ``--quantization`` and ``--probe`` checked among their choices (one line naming them, otherwise),
    as ``run_eval``'s keywords."""
    from pcctune.orchestration.evaluate import PROBES, QUANTIZATIONS, TASK_GROUPS

    _check_choice("task group", tasks, TASK_GROUPS)
    _check_choice("quantization", quantization, QUANTIZATIONS)
    _check_choice("probe", probe, PROBES)
    return {"tasks": tasks, "quantization": quantization, "probe": probe}


@contextmanager
def _interrupt_says(message: str) -> Iterator[None]:
    """A Ctrl-C inside becomes ``Interrupted(message)``: one line saying what is kept and how to continue."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(message) from None


@app.command("eval")
def eval_command(
    model: ModelArgument,
    tasks: Annotated[str, typer.Option(help="task group to evaluate: sts | transfer | all")] = "sts",
    data: DataOption = None,
    template: TemplateOption = None,
    pooling: PoolingOption = None,
    dtype: Annotated[str, typer.Option(help="fp32 | bf16 | fp16")] = "fp32",
    token_budget: TokenBudgetOption = None,
    max_seq_length: Annotated[int | None, typer.Option(min=1, help="token budget (only the sentence is cut)")] = None,
    seed: Annotated[int, typer.Option(help="recorded in the results; seeds torch")] = DEFAULT_SEED,
    output: Annotated[Path | None, typer.Option(help="write the results JSON here")] = None,
    protocol: Annotated[str, typer.Option(help=" | ".join(PROTOCOLS) + " (docs/evaluation.md)")] = DEFAULT_PROTOCOL,
    backend: EvalBackendOption = "torch",
    quantization: QuantizationOption = "none",
    probe: ProbeOption = "sklearn",
    probe_seed: ProbeSeedOption = None,
    adapter: AdapterOption = None,
    pairs: PairsOption = None,
    sentence1_column: Annotated[str | None, typer.Option(help="--pairs: the first sentence's column")] = None,
    sentence2_column: Annotated[str | None, typer.Option(help="--pairs: the second sentence's column")] = None,
    score_column: Annotated[str | None, typer.Option(help="--pairs: the gold score's column")] = None,
    split: SplitOption = None,
    prompt: PromptOption = None,
    prompt_name: PromptNameOption = None,
) -> None:
    """Evaluate MODEL on the seven STS tasks (a named protocol) and/or the transfer tasks, or on your own --pairs."""
    from pcctune.orchestration.evaluate import run_eval

    choices = _eval_choices(tasks, quantization, probe)
    with _interrupt_says(f"interrupted; no results were written{KEPT_VECTORS if output else ''}"):
        run_eval(
            model,
            data,
            **choices,
            template=template,
            pooling=_pooling(pooling),
            dtype=dtype,
            token_budget=token_budget,
            max_seq_length=max_seq_length,
            seed=seed,
            output=output,
            console=console,
            protocol=protocol,
            backend=_backend(backend),
            adapter=adapter,
            probe_seed=probe_seed,
            prompt=prompt,
            prompt_name=prompt_name,
            **_own_pairs(pairs, split, sentence1=sentence1_column, sentence2=sentence2_column, score=score_column),
        )


@app.command("encode")
def encode_command(
    model: ModelArgument,
    sentences: Annotated[list[str], typer.Argument(help="sentences to embed")],
    template: TemplateOption = None,
    pooling: PoolingOption = None,
    dtype: Annotated[str, typer.Option(help="fp32 | bf16 | fp16")] = "fp32",
    output: Annotated[Path | None, typer.Option(help="save the embeddings as .npy")] = None,
    prompt: PromptOption = None,
    prompt_name: PromptNameOption = None,
) -> None:
    """Embed sentences; print their shape and cosine similarity matrix (or save them)."""
    from pcctune.orchestration.encode import run_encode

    run_encode(model, sentences, template, _pooling(pooling), dtype, output, console, prompt, prompt_name)


OVERRIDE_FLAGS = {"output_dir": "--output-dir", "data_dir": "--data", "tasks": "--tasks"}
"""The config keys ``pcctune train`` also takes as options of their own: an error names the option given."""


def _train_config(
    config: Path, set_: list[str] | None, output_dir: str | None, data: Path | None, tasks: str | None
) -> Any:
    """``pcctune train``'s run config: the file with ``--set`` and the options that override its keys (an error
    names the option given)."""
    from pcctune.orchestration.library import load_config

    if tasks is not None and not tasks.replace(",", "").strip():
        raise PcctuneError("--tasks names no test set; give none for no test evaluation, sts for the seven")
    overrides = _overrides(set_, output_dir, data) | ({"tasks": tasks} if tasks is not None else {})
    given = {"output_dir": output_dir, "data_dir": data, "tasks": tasks}
    return load_config(config, overrides, flags={key: OVERRIDE_FLAGS[key] for key in given if given[key] is not None})


def _overrides(set_: list[str] | None, output_dir: str | None, data: Path | None) -> dict[str, Any]:
    from pcctune.yaml_input import read_yaml_value

    overrides: dict[str, Any] = {}
    for item in set_ or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PcctuneError(f"--set expects key=value, got {item!r}")
        overrides[key] = read_yaml_value(value, f"--set {key}")
    if output_dir is not None:
        if not output_dir.strip():
            raise PcctuneError("--output-dir is empty; name the run's folder")
        overrides["output_dir"] = output_dir
    if data:
        overrides["data_dir"] = str(data)
    return overrides


def _resume_command() -> str:
    args = [arg for arg in sys.argv[1:] if arg not in ("--resume", "--overwrite")]
    return shlex.join(["pcctune", *args, "--resume"])


@app.command("train")
def train_command(
    config: Annotated[Path, typer.Argument(help="YAML run config (see configs/)")],
    resume: Annotated[bool, typer.Option(help="continue the run in output_dir (same settings)")] = False,
    overwrite: Annotated[bool, typer.Option(help="replace the run in output_dir")] = False,
    resume_from: Annotated[
        Path | None, typer.Option(help="continue from this checkpoint (any step of any stage)")
    ] = None,
    compare: Annotated[
        str | None, typer.Option(help="rerun the last stage with each loss, e.g. pearson,infonce_positives")
    ] = None,
    output_dir: Annotated[str | None, typer.Option(help="override output_dir")] = None,
    data: DataOption = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a config key: stages.0.epochs=2")] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            help="what the test evaluations score: sts (the seven STS test sets), none (no test evaluation), or a "
            "comma-separated list of STS task names and your own test pair files (.csv/.tsv/.jsonl) or Hub dataset "
            "ids; default: the config's tasks"
        ),
    ] = None,
) -> None:
    """Run the stages of CONFIG (stage 1 contrastive, stage 2 Pearson), evaluating after each."""
    from pcctune.distributed import finish
    from pcctune.orchestration.pipeline import run_pipeline

    if resume and overwrite:
        raise PcctuneError("--resume continues a run and --overwrite replaces it; pass one of them")
    losses = [loss.strip() for loss in compare.split(",")] if compare else None
    run = _train_config(config, set_, output_dir, data, tasks)
    with _interrupt_says(f"interrupted; checkpoints are kept in {run.output_dir}; continue with: {_resume_command()}"):
        run_pipeline(
            run,
            resume=resume,
            compare=losses,
            console=console,
            overwrite=overwrite,
            resume_from=str(resume_from) if resume_from else None,
        )
        finish()


@app.command("sweep")
def sweep_command(
    config: Annotated[Path, typer.Argument(help="YAML run config whose values the search changes")],
    space: Annotated[Path, typer.Option(help="YAML search space: dotted config keys → distributions")],
    output: Annotated[Path, typer.Option(help="sweep folder (study, trials, winner, seeds); rerun to continue")],
    trials: Annotated[int, typer.Option(min=1, help="finished (or pruned) trials to search")] = 20,
    seeds: Annotated[int, typer.Option(min=1, help="seeds the winner is trained and scored with")] = 3,
    prune_after: Annotated[
        int, typer.Option(min=0, help="training steps before the median pruner may stop a trial (slow starters)")
    ] = 0,
    data: DataOption = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="fixed override for every run: stages.0.epochs=2")
    ] = None,
    grow: Annotated[
        bool,
        typer.Option(
            help="also train the winner at 2× and 4× its last stage's schedule and at 4× with half its learning rate "
            "(8× where a 4× leads) and choose again on dev: the same growth for every sweep, so methods compared "
            "through their sweeps are not stopped early"
        ),
    ] = False,
) -> None:
    """Search CONFIG's hyperparameters on dev data (optuna), then score the winner on the test sets over seeds."""
    from pcctune.orchestration.sweep import run_sweep

    again = shlex.join(["pcctune", *sys.argv[1:]])
    with _interrupt_says(f"interrupted; finished trials are kept in {output}; continue with: {again}"):
        run_sweep(config, space, trials, seeds, output, _overrides(set_, None, data), console, prune_after, grow)


@app.command("icl")
def icl_command(
    model: Annotated[str, typer.Argument(help="a causal LM: packaged short name, folder, .gguf file or Hub id")],
    template: Annotated[str, typer.Option(help="base template the demonstration is prepended to")] = "eol",
    candidates: Annotated[int, typer.Option(min=1, help="how many candidate sentences to label and score")] = 16,
    dev: Annotated[
        str, typer.Option(help="dev set (test pairs removed): sick-trial | stsb-dev-filtered | sick-trial+stsb-dev")
    ] = "sick-trial",
    dtype: Annotated[str, typer.Option(help="fp32 | bf16")] = "fp32",
    seed: Annotated[int, typer.Option(help="which candidate sentences are drawn")] = 0,
    data: DataOption = None,
    output: Annotated[Path | None, typer.Option(help="save the model with the best demonstration here")] = None,
) -> None:
    """Pick an in-context demonstration (PromptEOL §3.2) on a dev set; print every candidate's score."""
    from pcctune.orchestration.icl import run_icl

    kept = "; the candidates scored so far are kept: run the same command to continue" if output else ""
    with _interrupt_says(f"interrupted; no model was saved{kept}"):
        run_icl(model, template, candidates, dev, dtype, seed, data, output, console)


@app.command("bound")
def bound_command(
    n: Annotated[list[int] | None, typer.Option("--n", help="number of pairs (repeatable)")] = None,
    test_sets: Annotated[
        bool, typer.Option(help="also the ceilings of the seven real STS test sets (gold ties)")
    ] = False,
    data: DataOption = None,
    results: Annotated[Path | None, typer.Option(help="a pcctune eval JSON to plot next to the ceilings")] = None,
    plot: Annotated[Path | None, typer.Option(help="save a plot of the bounds (PNG)")] = None,
    output: Annotated[Path | None, typer.Option(help="save the numbers as JSON")] = None,
) -> None:
    """The Spearman ceiling of a binary classifier: the paper's 0.875 and the exact √3/2 optimum."""
    from pcctune.orchestration.bound import run_bound

    run_bound(n or [], test_sets, data, results, plot, output, console)


@app.command("export")
def export_command(
    model: Annotated[Path, typer.Argument(help="a saved pcctune model folder (e.g. RUN/stage2-pcc/final)")],
    output: Annotated[Path, typer.Option(help="folder for the exported model")],
    merge: Annotated[bool, typer.Option(help="fold the LoRA adapter into full-precision weights")] = False,
    adapter_only: Annotated[
        bool, typer.Option(help="write the LoRA adapter alone, to score on its base: pcctune eval BASE --adapter")
    ] = False,
    dtype: Annotated[str, typer.Option(help="fp32 | bf16 | fp16: weights of the merged model or adapter")] = "fp32",
    backend: Annotated[
        str, typer.Option(help="torch | onnx | openvino: also export the backbone (onnx/, openvino/ as ST lays out)")
    ] = "torch",
) -> None:
    """Export a trained model for sharing, as plain sentence-transformers where it can be (no pcctune needed).

    --merge folds a LoRA / QLoRA adapter into one full-precision model; --adapter-only writes the adapter alone
    (e.g. --dtype fp16, to commit or share); --backend onnx | openvino adds the backbone in that format (score it
    with `pcctune eval OUTPUT --backend onnx`).
    """
    from pcctune.orchestration.export import run_export

    run_export(model, output, merge, dtype, _backend(backend), console, adapter_only)


@app.command("push")
def push_command(
    source: Annotated[Path, typer.Argument(help="a saved model folder or a finished run folder (its last stage)")],
    repo_id: Annotated[str, typer.Option(help="Hub repository, e.g. user/smollm2-pcc")],
    private: Annotated[bool, typer.Option(help="create the repository private")] = False,
    token: Annotated[str | None, typer.Option(help="Hub token (default: HF_TOKEN or the saved login)")] = None,
) -> None:
    """Upload a trained model, with its model card, to the Hugging Face Hub (sentence-transformers' push_to_hub)."""
    from pcctune.orchestration.push import run_push

    run_push(source, repo_id, private, token, console)


@app.command("mteb")
def mteb_command(
    model: ModelArgument,
    tasks: Annotated[str, typer.Option(help="sts | paper | MTEB task names, comma-separated")] = "sts",
    output: Annotated[Path, typer.Option(help="MTEB result cache folder (results/MODEL/REVISION/TASK.json)")] = Path(
        "runs/mteb"
    ),
    local_data: Annotated[Path | None, typer.Option(help="folder of datasets saved as TASK_NAME/ (no Hub)")] = None,
    template: TemplateOption = None,
) -> None:
    """Evaluate MODEL with MTEB itself and write MTEB's own result files."""
    from pcctune.orchestration.mteb import run_mteb

    run_mteb(model, tasks, output, local_data, template, console)


@app.command("report")
def report_command(
    runs: Annotated[list[Path], typer.Argument(help="result JSON files or run folders")],
    output: Annotated[Path, typer.Option(help="folder for report.md and plots")] = Path("runs/report"),
    scatter_model: Annotated[str | None, typer.Option(help="also plot predicted vs gold for this model")] = None,
    scatter_task: Annotated[str, typer.Option(help="task of the scatter plot")] = "STSBenchmark",
    data: DataOption = None,
) -> None:
    """Turn result JSONs into a markdown table (with deltas to the first run) and plots."""
    from pcctune.orchestration.report import write_report
    from pcctune.paths import resolve_senteval_dir

    scatter = (scatter_model, scatter_task, resolve_senteval_dir(data)) if scatter_model else None
    console.print(write_report(runs, output, scatter), markup=False, highlight=False)  # markdown, shown as written
    console.print(f"report -> {output / 'report.md'}")


RunsArgument = Annotated[
    str,
    typer.Argument(
        help="run folders or result files, comma-separated; a quoted glob such as 'runs/pearson-*' takes every match "
        "(with --bootstrap: one model or one run folder)"
    ),
]


@app.command("compare")
def compare_command(
    runs_a: RunsArgument,
    runs_b: RunsArgument,
    task: Annotated[
        str | None, typer.Option(help="only this task (e.g. STSBenchmark, avg); default: every task both sides scored")
    ] = None,
    bootstrap: Annotated[
        bool, typer.Option("--bootstrap", help="compare two models on the same STS test pairs instead of seeds")
    ] = False,
    data: DataOption = None,
    protocol: Annotated[str | None, typer.Option(help="--bootstrap: " + " | ".join(PROTOCOLS))] = None,
    seed: Annotated[
        int | None, typer.Option(help=f"--bootstrap: seeds the resampling (default {BOOTSTRAP_SEED})")
    ] = None,
    resamples: Annotated[
        int | None, typer.Option(min=100, help="--bootstrap: resamples of the test pairs (default: as eval --pairs)")
    ] = None,
    output: Annotated[Path | None, typer.Option(help="write the comparison record (JSON) here")] = None,
    variant: Annotated[
        str | None,
        typer.Option(
            help="the final stage to compare of runs trained with --compare (its loss, e.g. pearson, or its label, "
            "e.g. pcc-pearson), on both sides"
        ),
    ] = None,
    variant_a: Annotated[str | None, typer.Option(help="as --variant, for A alone")] = None,
    variant_b: Annotated[str | None, typer.Option(help="as --variant, for B alone")] = None,
) -> None:
    """B − A of two sets of training runs: per STS task (after each run's final stage) and their average, the mean
    difference with its 95 % interval over seeds (paired by seed where both sides share 2 or more, the runs of other
    seeds then left out and named, else Welch's) and a verdict: a win or a loss only where the interval excludes 0,
    else a tie. With --bootstrap, two models scored on the same test pairs (a run folder's model as the run scored
    it), the interval from a paired bootstrap over the pairs (the test set's noise, not the seeds')."""
    from pcctune.orchestration.compare import run_compare

    run_compare(
        runs_a,
        runs_b,
        bootstrap,
        data,
        protocol,
        task,
        seed,
        resamples,
        output,
        console,
        variant_a or variant,
        variant_b or variant,
    )


NearOption = Annotated[float, typer.Option(help="the near level's Jaccard similarity of character 3-grams")]


@data_app.command("stage2")
def data_stage2_command(
    data: DataOption = None,
    leakage: Annotated[
        LeakageLevel, typer.Option(help="what the filter removes: pair (the paper's), normalized, near or sentence")
    ] = LeakageLevel.pair,
    near_threshold: NearOption = NEAR_THRESHOLD,
    rescale_sick: Annotated[bool, typer.Option(help="map SICK 1–5 scores to 0–5 as 5·(x−1)/4")] = False,
    output: Annotated[Path, typer.Option(help="where to write the stage-2 pairs (jsonl)")] = Path(
        "runs/data/stage2.jsonl"
    ),
    report: Annotated[Path, typer.Option(help="where to write the leakage report (json)")] = Path(
        "runs/data/stage2_leakage.json"
    ),
) -> None:
    """Build the stage-2 set: STS-B train + SICK-R train minus every pair the leakage filter flags."""
    from pcctune.orchestration.stage2 import run_stage2

    run_stage2(data, leakage, rescale_sick, output, report, console, near_threshold)


@data_app.command("audit")
def data_audit_command(
    data: DataOption = None,
    pairs: Annotated[list[Path] | None, typer.Option(help="a pairs file to audit (csv/tsv/jsonl); repeatable")] = None,
    config: Annotated[
        Path | None, typer.Option(help="audit the training data of each stage of this run config")
    ] = None,
    against: Annotated[
        list[Path] | None, typer.Option(help="your own test pairs files instead of the seven STS test sets; repeatable")
    ] = None,
    near_threshold: NearOption = NEAR_THRESHOLD,
    output: Annotated[Path, typer.Option(help="where to write the audit record (json)")] = Path("runs/data/audit.json"),
) -> None:
    """Check training pairs against the test sets at every leakage level: pair, normalized, near, sentence.

    Without --pairs or --config: STS-B train and SICK-R train (the stage-2 sources) and the dev sets used
    for checkpoint selection (SICK trial, STS-B dev)."""
    from pcctune.orchestration.audit import run_audit

    run_audit(data, pairs or [], config, against or [], near_threshold, output, console)


@data_app.command("download")
def data_download_command(
    dest: Annotated[
        Path, typer.Option(help="folder to create senteval/ in (then: --data DEST or PCCTUNE_DATA)")
    ] = Path("data"),
    local_datasets: Annotated[
        Path | None, typer.Option(help="read saved copies (save_to_disk) as DIR/HUB_ID instead of the Hub")
    ] = None,
    verify: Annotated[bool, typer.Option(help="check pair counts and content hashes against the release")] = True,
    overwrite: Annotated[bool, typer.Option(help="replace an existing DEST/senteval")] = False,
    nli: Annotated[
        bool, typer.Option(help="instead: SimCSE's NLI triplets (stage 1) as DEST/nli_for_simcse.csv")
    ] = False,
    sha256: Annotated[str | None, typer.Option(help="with --nli: refuse a file of another sha256")] = None,
) -> None:
    """Fetch the 7 STS test sets, STS-B train/dev and SICK (MTEB's Hub datasets, pinned) in the SentEval layout."""
    from pcctune.orchestration.data import run_download, run_nli_download

    if nli:
        run_nli_download(dest, local_datasets, sha256, console)
        return
    if sha256 is not None:
        raise PcctuneError("--sha256 checks the NLI triplets' file (--nli); the STS sets are checked by --verify")
    run_download(dest, local_datasets, verify, overwrite, console)


@data_app.command("tasks")
def data_tasks_command(
    data: DataOption = None,
    check_release: Annotated[
        bool, typer.Option("--check-release", help="fail unless every set is the SentEval release's (counts, hashes)")
    ] = False,
) -> None:
    """Count the pairs of each of the seven STS test tasks and their subsets."""
    from pcctune.orchestration.data import run_task_counts

    run_task_counts(data, check_release, console)


@cache_app.command("list")
def cache_list_command(
    kind: Annotated[str | None, typer.Option(help="only this kind (gguf, packaged, resume, ...)")] = None,
) -> None:
    """Show every cache entry: kind, name, size, age and what made it."""
    from pcctune.orchestration.cache import entries_table, list_entries
    from pcctune.paths import cache_root

    entries = list_entries(kind)
    console.print(entries_table(entries) if entries else f"the cache at {cache_root()} is empty")


@cache_app.command("clear")
def cache_clear_command(
    kind: Annotated[str | None, typer.Option(help="remove only this kind (gguf, packaged, resume, ...)")] = None,
    all_: Annotated[bool, typer.Option("--all", help="remove every entry")] = False,
) -> None:
    """Remove cache entries, of one kind or all; entries another command is using are left alone."""
    from pcctune.orchestration.cache import clear_entries, human_size

    if (kind is None) == (not all_):
        raise PcctuneError("say what to remove: --kind KIND or --all (see: pcctune cache list)")
    removed, busy = clear_entries(kind)
    console.print(f"removed {len(removed)} entries ({human_size(sum(e.size for e in removed))})")
    for entry in busy:
        console.print(f"kept {entry.path}: in use by another pcctune command")


def _fail(code: int, message: str) -> None:
    plain_console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(message)}", highlight=False)
    sys.exit(code)


def _usage_message(error: typer.TyperException) -> str:
    """The message of a usage error, with the command whose --help explains it (when the error has one)."""
    message = error.format_message()
    context = getattr(error, "ctx", None)
    if context is not None:
        message += f" (see '{context.command_path} --help')"
    return message


SIGNAL_EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
_received: list[int] = []


def _on_signal(signum: int, frame: Any) -> None:
    """Remember the signal, then interrupt like Ctrl-C: every command turns that into what it kept."""
    _received.append(signum)
    raise KeyboardInterrupt


def _install_signal_handlers() -> dict[int, Any]:
    """SIGINT and SIGTERM interrupt the command (a SIGINT that the parent ignores, as ``nohup`` does,
    stays ignored); the previous handlers are returned to be put back."""
    previous: dict[int, Any] = {int(signum): signal.getsignal(signum) for signum in SIGNAL_EXIT_CODES}
    _received.clear()
    for signum, handler in previous.items():
        if not (signum == signal.SIGINT and handler is signal.SIG_IGN):
            signal.signal(signum, _on_signal)
    return previous


def _interrupt_code() -> int:
    """130 for SIGINT, 143 for SIGTERM: the code of the first signal received."""
    return SIGNAL_EXIT_CODES.get(signal.Signals(_received[0]), 130) if _received else 130


def main() -> None:
    """Entry point: run the app and turn every outcome into the documented exit codes."""
    previous = _install_signal_handlers()
    try:
        _run(sys.argv[1:])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _app(args: list[str]) -> int | None:
    """The app's own outcome, run with the command line's CPU speed settings (those measured fastest on the CPU's
    kind, or those ``PCCTUNE_CPU_SPEEDUPS`` names; docs/speed-settings.md); the progress bars an exception left open
    are closed first, so that the message about it starts its own line instead of trailing a half-drawn bar."""
    try:
        with using(command_line()):
            return app(args=args, prog_name="pcctune", standalone_mode=False)
    finally:
        from tqdm import tqdm

        for bar in list(tqdm._instances):  # tqdm's registry of open bars
            bar.close()


@contextmanager
def _log_shown(debug: bool) -> Iterator[None]:
    """With ``--debug``, pcctune's own log from INFO up on stderr for the command (e.g. which CPU speed settings are
    on and why); the logger as it was afterwards."""
    logger = logging.getLogger("pcctune")
    if not debug:
        yield
        return
    handler, level = logging.StreamHandler(sys.stderr), logger.level
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run(argv: list[str]) -> None:
    debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    with known_noise_dropped(), _log_shown(debug):
        _run_command([arg for arg in argv if arg != "--debug"], debug)


def _run_command(args: list[str], debug: bool) -> None:
    """Run the command; every outcome becomes its exit code and at most one line on stderr."""
    try:
        code = _app(args)
    except PcctuneError as error:
        _fail(2, str(error))
    except typer.TyperException as error:  # click's usage errors, from typer's own copy of click
        _fail(2, _usage_message(error))
    except Interrupted as stop:
        plain_console(stderr=True, soft_wrap=True).print(escape(str(stop)), highlight=False)
        sys.exit(_interrupt_code())
    except (KeyboardInterrupt, typer.Abort):
        plain_console(stderr=True).print("interrupted")
        sys.exit(_interrupt_code())
    except Exception as error:
        if debug:
            traceback.print_exc()
        detail = str(error).splitlines()[0] if str(error) else ""
        _fail(
            1,
            f"internal error ({type(error).__name__}: {detail}); rerun with --debug or {DEBUG_ENV}=1 "
            "for the traceback, and please report it",
        )
    if code == 130 or _received:  # typer returns 130 for a Ctrl-C outside our handlers; a swallowed signal
        plain_console(stderr=True).print("interrupted; what had finished before the signal is kept")
        sys.exit(_interrupt_code())
    sys.exit(code or 0)


if __name__ == "__main__":
    main()
