"""The commands that score or embed a model: ``eval``, ``encode``, ``compare``, ``report``, ``mteb``, ``bound`` and
``icl``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pcctune.cli.app import DataOption, app, backend_choice, check_choice, console, interrupt_says
from pcctune.errors import PcctuneError
from pcctune.orchestration.data import DEFAULT_PROTOCOL, PAIR_SPLIT, PROTOCOLS
from pcctune.seeding import BOOTSTRAP_SEED, DEFAULT_SEED

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
        check_choice("pooling", value, POOLINGS)
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


TasksOption = Annotated[
    str, typer.Option(help="what to evaluate: sts | transfer | all (or task names, comma-separated: STSBenchmark,MR)")
]


def _eval_choices(tasks: str, quantization: str, probe: str) -> dict[str, Any]:
    """``--quantization`` and ``--probe`` checked among their choices (one line naming them, otherwise), with
    ``--tasks``, as ``run_eval``'s keywords (``run_eval`` reads ``--tasks`` itself, before any weight loads)."""
    from pcctune.orchestration.evaluate import PROBES, QUANTIZATIONS

    check_choice("quantization", quantization, QUANTIZATIONS)
    check_choice("probe", probe, PROBES)
    return {"tasks": tasks, "quantization": quantization, "probe": probe}


@app.command("eval")
def eval_command(
    model: ModelArgument,
    tasks: TasksOption = "sts",
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
    """Evaluate MODEL on the STS tasks (a named protocol) and/or the transfer tasks, or on your own --pairs."""
    from pcctune.orchestration.evaluate import run_eval

    choices = _eval_choices(tasks, quantization, probe)
    with interrupt_says(f"interrupted; no results were written{KEPT_VECTORS if output else ''}"):
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
            backend=backend_choice(backend),
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


RunsArgument = Annotated[
    str,
    typer.Argument(
        help="run folders or result files, comma-separated; a quoted glob such as 'runs/pearson-*' takes every match "
        "(with --bootstrap: one model or one run folder); NAME=RUNS names the side (pearson='runs/pearson-*')"
    ),
]
SidesArgument = Annotated[
    list[str],
    typer.Argument(
        help="B, as A; several Bs (each its own argument) are read as one family against A on --task (default avg): "
        "Holm's decisions and Bonferroni's simultaneous intervals",
        show_default=False,
    ),
]
CompareTaskOption = Annotated[
    str | None, typer.Option(help="only this task (e.g. STSBenchmark, avg); default: every task both sides scored")
]
FamilySizeOption = Annotated[
    int | None,
    typer.Option(min=1, help="the comparisons planned for the family, where only some have run (default: the Bs)"),
]
BootstrapOption = Annotated[
    bool, typer.Option("--bootstrap", help="compare two models on the same STS test pairs instead of seeds")
]
BootstrapProtocolOption = Annotated[str | None, typer.Option(help="--bootstrap: " + " | ".join(PROTOCOLS))]
BootstrapSeedOption = Annotated[
    int | None, typer.Option(help=f"--bootstrap: seeds the resampling (default {BOOTSTRAP_SEED})")
]
ResamplesOption = Annotated[
    int | None, typer.Option(min=100, help="--bootstrap: resamples of the test pairs (default: as eval --pairs)")
]
VariantOption = Annotated[
    str | None,
    typer.Option(
        help="the final stage to compare of runs trained with --compare (its loss, e.g. pearson, or its label, "
        "e.g. pcc-pearson), on both sides"
    ),
]


@app.command("compare")
def compare_command(
    runs_a: RunsArgument,
    runs_b: SidesArgument,
    task: CompareTaskOption = None,
    family_size: FamilySizeOption = None,
    bootstrap: BootstrapOption = False,
    data: DataOption = None,
    protocol: BootstrapProtocolOption = None,
    seed: BootstrapSeedOption = None,
    resamples: ResamplesOption = None,
    output: Annotated[Path | None, typer.Option(help="write the comparison record (JSON) here")] = None,
    plot: Annotated[
        Path | None,
        typer.Option(help="draw each B − A with its intervals here (PNG); reads the Bs as a family, one B too"),
    ] = None,
    variant: VariantOption = None,
    variant_a: Annotated[str | None, typer.Option(help="as --variant, for A alone")] = None,
    variant_b: Annotated[str | None, typer.Option(help="as --variant, for B alone (every B)")] = None,
) -> None:
    """B − A of two sets of training runs: per STS task (after each run's final stage) and their average, the mean
    difference with its 95 % interval over seeds (paired by seed where both sides share 2 or more, the runs of other
    seeds then left out and named, else Welch's) and a verdict: a win or a loss only where the interval excludes 0,
    else a tie. With --bootstrap, two models scored on the same test pairs (a run folder's model as the run scored
    it), the interval from a paired bootstrap over the pairs (the test set's noise, not the seeds'). With several Bs
    (or one B with --family-size or --plot), each B − A on one task, read as one family (Holm's decisions,
    Bonferroni's simultaneous intervals)."""
    from pcctune.orchestration.compare import bootstrap_flags, run_compare

    variants = {"variant_a": variant_a or variant, "variant_b": variant_b or variant}
    if len(runs_b) == 1 and family_size is None and plot is None:
        run_compare(runs_a, runs_b[0], bootstrap, data, protocol, task, seed, resamples, output, console, **variants)
        return
    from pcctune.orchestration.compare_family import run_compare_family

    if given := ["--bootstrap"] * bootstrap + bootstrap_flags(data, protocol, seed, resamples):
        raise PcctuneError(f"{', '.join(given)}: options of --bootstrap (two models); several Bs are runs over seeds")
    run_compare_family(runs_a, runs_b, task, family_size, output, console, plot=plot, **variants)


@app.command("report")
def report_command(
    runs: Annotated[
        list[Path], typer.Argument(help="result JSON files (eval, run, sweep or compare records) or their folders")
    ],
    output: Annotated[Path, typer.Option(help="folder for report.md and plots")] = Path("runs/report"),
    scatter_model: Annotated[str | None, typer.Option(help="also plot predicted vs gold for this model")] = None,
    scatter_task: Annotated[str, typer.Option(help="task of the scatter plot")] = "STSBenchmark",
    data: DataOption = None,
) -> None:
    """Turn result JSONs into a markdown table (with deltas to the first run) and plots; each comparison record
    (pcctune compare --output) adds its table and verdict."""
    from pcctune.orchestration.report import write_report
    from pcctune.paths import resolve_senteval_dir

    scatter = (scatter_model, scatter_task, resolve_senteval_dir(data)) if scatter_model else None
    # markdown, shown as written: a table row wider than the terminal stays one line
    console.print(write_report(runs, output, scatter), markup=False, highlight=False, soft_wrap=True)
    console.print(f"report -> {output / 'report.md'}")


@app.command("mteb")
def mteb_command(
    model: ModelArgument,
    tasks: Annotated[str, typer.Option(help="sts | paper | MTEB task names, comma-separated")] = "sts",
    output: Annotated[Path, typer.Option(help="MTEB result cache folder (results/MODEL/REVISION/TASK.json)")] = Path(
        "runs/mteb"
    ),
    local_data: Annotated[
        Path | None,
        typer.Option(
            help="folder of datasets saved as TASK_NAME/, read instead of the Hub (a task without one: the Hub)"
        ),
    ] = None,
    template: TemplateOption = None,
    model_name: Annotated[
        str | None, typer.Option(help="the name MTEB files the results under (default: the card's, else MODEL)")
    ] = None,
) -> None:
    """Evaluate MODEL with MTEB itself and write MTEB's own result files."""
    from pcctune.orchestration.mteb import run_mteb

    run_mteb(model, tasks, output, local_data, template, console, model_name)


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
    with interrupt_says(f"interrupted; no model was saved{kept}"):
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
