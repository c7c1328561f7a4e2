"""The ``pcctune`` command line: a thin door onto the library's functions.

Every user-facing failure is a :class:`PcctuneError`, printed as one ``error:`` line with exit
code 2 (the code typer uses for usage errors too).
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from pcctune.errors import PcctuneError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Pcc-tuning: sentence embeddings past the contrastive ceiling.")
data_app = typer.Typer(no_args_is_help=True, help="Prepare and inspect data (stage-2 set, leakage reports).")
app.add_typer(data_app, name="data")
console = Console(width=160)

DataOption = Annotated[
    Optional[Path],
    typer.Option("--data", help="SentEval folder (or a root holding senteval/); default $PCCTUNE_DATA or ../shared/data"),
]


class TaskGroup(str, Enum):
    sts = "sts"
    transfer = "transfer"
    all = "all"


class NormalizationChoice(str, Enum):
    exact = "exact"
    whitespace = "whitespace"
    case = "case"
    whitespace_case = "whitespace+case"


@app.command("eval")
def eval_command(
    model: Annotated[str, typer.Argument(help="packaged short name, local folder, .gguf file or Hub id")],
    tasks: Annotated[TaskGroup, typer.Option(help="task group to evaluate")] = TaskGroup.sts,
    data: DataOption = None,
    template: Annotated[Optional[str], typer.Option(help="eol | sth | sum | a string with one {text}")] = None,
    pooling: Annotated[Optional[str], typer.Option(help="mean | cls | lasttoken (default: saved, else by model kind)")] = None,
    dtype: Annotated[str, typer.Option(help="fp32 | bf16 | fp16")] = "fp32",
    batch_size: Annotated[int, typer.Option(help="sentences per encoding batch")] = 64,
    max_seq_length: Annotated[Optional[int], typer.Option(help="token budget (only the sentence is cut)")] = None,
    seed: Annotated[int, typer.Option(help="recorded in the results; seeds torch")] = 42,
    output: Annotated[Optional[Path], typer.Option(help="write the results JSON here")] = None,
) -> None:
    """Evaluate MODEL on the seven STS tasks (SimCSE/SentEval protocol) and/or the transfer tasks."""
    from pcctune.evaluation.run import run_eval

    run_eval(
        model, data, tasks=tasks.value, template=template, pooling=pooling, dtype=dtype, batch_size=batch_size,
        max_seq_length=max_seq_length, seed=seed, output=output, console=console,
    )


@app.command("encode")
def encode_command(
    model: Annotated[str, typer.Argument(help="packaged short name, local folder, .gguf file or Hub id")],
    sentences: Annotated[list[str], typer.Argument(help="sentences to embed")],
    template: Annotated[Optional[str], typer.Option(help="eol | sth | sum | a string with one {text}")] = None,
    pooling: Annotated[Optional[str], typer.Option(help="mean | cls | lasttoken")] = None,
    dtype: Annotated[str, typer.Option(help="fp32 | bf16 | fp16")] = "fp32",
    output: Annotated[Optional[Path], typer.Option(help="save the embeddings as .npy")] = None,
) -> None:
    """Embed sentences; print their shape and cosine similarity matrix (or save them)."""
    import numpy as np

    from pcctune.modeling.build import build_model

    encoder = build_model(model, template=template, pooling=pooling, dtype=dtype)
    vectors = encoder.encode(sentences, convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
    if output is not None:
        np.save(output, vectors)
        console.print(f"saved {vectors.shape} to {output}")
        return
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    console.print(f"embeddings: {vectors.shape}; cosine similarities:")
    console.print(np.array2string(normed @ normed.T, precision=4))


@app.command("train")
def train_command(
    config: Annotated[Path, typer.Argument(help="YAML run config (see configs/)")],
    resume: Annotated[bool, typer.Option(help="skip finished stages, continue the interrupted one")] = False,
    resume_from: Annotated[Optional[Path], typer.Option(help="continue from this checkpoint (any step of any stage)")] = None,
    compare: Annotated[Optional[str], typer.Option(help="rerun the last stage with each loss, e.g. pearson,contrastive")] = None,
    output_dir: Annotated[Optional[str], typer.Option(help="override output_dir")] = None,
    data: DataOption = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a config key: stages.0.epochs=2")] = None,
) -> None:
    """Run the stages of CONFIG (stage 1 contrastive, stage 2 Pearson), evaluating after each."""
    import yaml

    from pcctune.training.config import load_config
    from pcctune.training.pipeline import run_pipeline

    overrides: dict = {}
    for item in set_ or []:
        if "=" not in item:
            raise PcctuneError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        overrides[key] = yaml.safe_load(value)
    if output_dir:
        overrides["output_dir"] = output_dir
    if data:
        overrides["data_dir"] = str(data)
    losses = [loss.strip() for loss in compare.split(",")] if compare else None
    for loss in losses or []:
        if loss not in ("pearson", "infonce", "contrastive"):
            raise PcctuneError(f"unknown loss {loss!r} in --compare; choose from pearson, infonce, contrastive")
    run_pipeline(load_config(config, overrides), resume=resume, compare=losses, console=console,
                 resume_from=str(resume_from) if resume_from else None)


class DevSet(str, Enum):
    sick_trial = "sick-trial"
    stsb_dev_filtered = "stsb-dev-filtered"


@app.command("icl")
def icl_command(
    model: Annotated[str, typer.Argument(help="a causal LM: packaged short name, folder, .gguf file or Hub id")],
    template: Annotated[str, typer.Option(help="base template the demonstration is prepended to")] = "eol",
    candidates: Annotated[int, typer.Option(help="how many candidate sentences to label and score")] = 16,
    dev: Annotated[DevSet, typer.Option(help="dev set (test pairs removed) that picks the demonstration")] = DevSet.sick_trial,
    dtype: Annotated[str, typer.Option(help="fp32 | bf16")] = "fp32",
    seed: Annotated[int, typer.Option(help="which candidate sentences are drawn")] = 0,
    data: DataOption = None,
    output: Annotated[Optional[Path], typer.Option(help="save the model with the best demonstration here")] = None,
) -> None:
    """Pick an in-context demonstration (PromptEOL §3.2) on a dev set; print every candidate's score."""
    from rich.table import Table

    from pcctune.evaluation.record import write_json
    from pcctune.modeling.build import build_model
    from pcctune.modeling.demonstrations import rank_demonstrations
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.data import dev_pairs

    senteval = resolve_senteval_dir(data)
    encoder = build_model(model, template=template, dtype=dtype)
    results = rank_demonstrations(encoder, senteval, candidates, seed, dev_pairs(dev.value, senteval))
    table = Table(title=f"demonstrations for {model} on {dev.value} (Spearman × 100, dev only)")
    for column in ("rank", "sentence", "word", "dev"):
        table.add_column(column)
    for rank, r in enumerate(results, start=1):
        table.add_row(str(rank), r.demonstration.sentence or "(no demonstration)", r.demonstration.word, f"{r.dev_spearman:.2f}")
    console.print(table)
    if output is not None:
        encoder[0].template = results[0].template
        encoder.save(str(output))
        write_json({"model": model, "dev": dev.value, "candidates": [
            {"sentence": r.demonstration.sentence, "word": r.demonstration.word, "dev_spearman": r.dev_spearman}
            for r in results], "chosen_template": results[0].template}, output / "demonstration_search.json")
        console.print(f"model with the best demonstration -> {output}")


class BoundData(str, Enum):
    sts = "sts"


@app.command("bound")
def bound_command(
    n: Annotated[Optional[list[int]], typer.Option("--n", help="number of pairs (repeatable)")] = None,
    data: Annotated[Optional[BoundData], typer.Option("--data", help="ceilings of the real STS test sets")] = None,
    senteval: Annotated[Optional[Path], typer.Option("--senteval", help="SentEval folder for --data sts")] = None,
    results: Annotated[Optional[Path], typer.Option(help="a pcctune eval JSON to plot next to the ceilings")] = None,
    plot: Annotated[Optional[Path], typer.Option(help="save a plot of the bounds (PNG)")] = None,
    output: Annotated[Optional[Path], typer.Option(help="save the numbers as JSON")] = None,
) -> None:
    """The Spearman ceiling of a binary classifier: the paper's 0.875 and the exact √3/2 optimum."""
    import json

    from rich.table import Table

    from pcctune.evaluation.bound import binary_bound
    from pcctune.evaluation.bound_report import dataset_ceilings, plot_bounds

    if not n and data is None:
        raise PcctuneError("give --n N (one or more) and/or --data sts")
    payload: dict = {}
    if n:
        table = Table(title="Best Spearman of a two-valued scorer over n pairs with distinct gold scores")
        for column in ("n", "paper formula 1−6Σd²/(n(n²−1))", "k", "exact (Pearson of tie-averaged ranks)", "k"):
            table.add_column(column, justify="right")
        for value in n:
            if value < 2:
                raise PcctuneError(f"--n must be at least 2 (got {value})")
            b = binary_bound(value)
            table.add_row(str(value), f"{b.paper:.6f}", str(b.paper_k), f"{b.exact:.6f}", str(b.exact_k))
            payload[f"n={value}"] = {"paper": b.paper, "paper_k": b.paper_k, "exact": b.exact, "exact_k": b.exact_k}
        console.print(table)
        console.print("limits: paper → 0.875, exact → √3/2 = 0.866025 (exactly √3/2 for every odd n)")
    ceilings = None
    if data is not None:
        from pcctune.data.senteval import load_test_tasks
        from pcctune.paths import resolve_senteval_dir

        ceilings = dataset_ceilings(load_test_tasks(resolve_senteval_dir(senteval)))
        table = Table(title="Best Spearman × 100 any two-valued scorer reaches on each test set (real gold ties)")
        for column in ("task", "pairs", "distinct gold", "ceiling", "high pairs", "√(3k(n−k)/(n²−1)) if no ties"):
            table.add_column(column, justify="right")
        for name, row in ceilings.items():
            if name == "avg":
                table.add_row("avg", "", "", f"{row['ceiling']:.2f}", "", "")
            else:
                table.add_row(name, str(row["n"]), str(row["distinct_scores"]), f"{row['ceiling']:.2f}",
                              str(row["high_pairs"]), f"{row['formula_exact']:.2f}")
        console.print(table)
        payload["sts_ceilings"] = ceilings
    if plot is not None:
        scores = json.loads(results.read_text())["sts"] if results else None
        plot_bounds(ceilings, scores, plot)
        console.print(f"plot -> {plot}")
    if output is not None:
        from pcctune.evaluation.record import write_json

        write_json(payload, output)


@app.command("report")
def report_command(
    runs: Annotated[list[Path], typer.Argument(help="result JSON files or run folders")],
    output: Annotated[Path, typer.Option(help="folder for report.md and plots")] = Path("runs/report"),
    scatter_model: Annotated[Optional[str], typer.Option(help="also plot predicted vs gold for this model")] = None,
    scatter_task: Annotated[str, typer.Option(help="task of the scatter plot")] = "STSBenchmark",
    data: DataOption = None,
) -> None:
    """Turn result JSONs into a markdown table (with deltas to the first run) and plots."""
    from pcctune.evaluation.report import bar_plot, collect_runs, markdown_table, model_scatter

    collected = collect_runs(runs)
    parts = ["# pcctune report", ""]
    for section, title in (("sts", "STS (Spearman × 100; deltas vs the first row)"), ("transfer", "Transfer (accuracy)")):
        table = markdown_table(collected, section)
        if table:
            plot = bar_plot(collected, section, output / f"{section}_bars.png")
            parts += [f"## {title}", "", table, "", f"![{section}]({plot.name})", ""]
    if scatter_model:
        from pcctune.paths import resolve_senteval_dir

        plot = model_scatter(scatter_model, scatter_task, resolve_senteval_dir(data), output / "scatter.png")
        parts += ["## Predicted vs gold", "", f"![scatter]({plot.name})", ""]
    output.mkdir(parents=True, exist_ok=True)
    (output / "report.md").write_text("\n".join(parts), encoding="utf-8")
    console.print("\n".join(parts))
    console.print(f"report -> {output / 'report.md'}")


@data_app.command("stage2")
def data_stage2_command(
    data: DataOption = None,
    normalize: Annotated[NormalizationChoice, typer.Option(help="how sentences are matched")] = NormalizationChoice.exact,
    rescale_sick: Annotated[bool, typer.Option(help="map SICK 1–5 scores to 0–5 as 5·(x−1)/4")] = False,
    output: Annotated[Path, typer.Option(help="where to write the stage-2 pairs (jsonl)")] = Path("runs/data/stage2.jsonl"),
    report: Annotated[Path, typer.Option(help="where to write the leakage report (json)")] = Path("runs/data/stage2_leakage.json"),
) -> None:
    """Build the stage-2 set: STS-B train + SICK-R train minus every pair found in a test set."""
    from pcctune.data.leakage import Normalization, write_report
    from pcctune.data.stage2 import build_stage2_set, save_pairs_jsonl
    from pcctune.paths import resolve_senteval_dir

    senteval = resolve_senteval_dir(data)
    result = build_stage2_set(senteval, Normalization(normalize.value), rescale_sick)
    save_pairs_jsonl(result.pairs, output)
    write_report(report, result.report_dict())
    from rich.table import Table

    table = Table(title=f"stage-2 leakage filter ({normalize.value} match) on {senteval}")
    for column in ("source", "total", "kept", "removed", "removed by test set"):
        table.add_column(column, justify="left" if column in ("source", "removed by test set") else "right")
    for r in [*result.reports, result.dev_overlap]:
        hits = ", ".join(f"{k} {v}" for k, v in r.removed_by_test_set.items())
        label = r.source + (" (overlap only; not in the set)" if r is result.dev_overlap else "")
        table.add_row(label, str(r.total), str(r.kept), str(r.removed), hits)
    console.print(table)
    console.print(f"stage-2 set: {len(result.pairs)} pairs -> {output}; report -> {report}")


@data_app.command("tasks")
def data_tasks_command(data: DataOption = None) -> None:
    """Count the pairs of each of the seven STS test tasks and their subsets."""
    from pcctune.data.senteval import load_test_tasks
    from pcctune.paths import resolve_senteval_dir

    for task in load_test_tasks(resolve_senteval_dir(data)):
        detail = ", ".join(f"{s.name} {len(s.pairs)}" for s in task.subsets) if len(task.subsets) > 1 else ""
        console.print(f"{task.name}: {len(task.pairs)} pairs  {detail}")


def main() -> None:
    """Entry point: run the app, turning user errors into one line and exit code 2."""
    try:
        app(standalone_mode=False)
    except PcctuneError as error:
        Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(str(error))}", highlight=False)
        sys.exit(2)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        console.print("aborted")
        sys.exit(130)
    except Exception as error:  # click usage errors carry their own exit code
        import click

        if isinstance(error, click.ClickException):
            error.show()
            sys.exit(error.exit_code)
        raise


if __name__ == "__main__":
    main()
