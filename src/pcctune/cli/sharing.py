"""The commands that share a trained model: ``export`` (plain sentence-transformers, merged, adapter only, ONNX or
OpenVINO) and ``push`` (to the Hugging Face Hub)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pcctune.cli.app import app, backend_choice, console


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

    run_export(model, output, merge, dtype, backend_choice(backend), console, adapter_only)


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
