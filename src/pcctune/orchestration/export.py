"""``pcctune export``: a trained model as plain sentence-transformers where it can be, merged or with a backend."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from pcctune.errors import PcctuneError
from pcctune.io import check_output_folder
from pcctune.modeling.backends import Backend
from pcctune.modeling.export import export_model, merge_adapter
from pcctune.orchestration.model_card import carry_section


def run_export(model: Path, output: Path, merge: bool, dtype: str, backend: Backend, console: Console) -> None:
    """``--merge`` folds a LoRA / QLoRA adapter into one model in ``dtype``; else re-save (with ``backend``)."""
    if merge and backend != "torch":
        raise PcctuneError("--merge and --backend are two steps: merge first, then export the merged folder")
    check_output_folder(output)
    if merge:
        console.print(f"merged model -> {merge_adapter(model, output, dtype)}")
        carry_section(model, output)
        return
    native = export_model(model, output, backend)
    carry_section(model, output)
    loads_in = (
        "plain sentence-transformers" if native else "needs pcctune (sentence cut-off, 4-bit or continuous prompts)"
    )
    console.print(f"model ({loads_in}{'' if backend == 'torch' else ', with ' + backend}) -> {output}")
