"""``pcctune export``: a trained model as plain sentence-transformers where it can be, merged or with a backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from pcctune.errors import PcctuneError
from pcctune.io import check_output_folder, write_text
from pcctune.modeling.adapters import ADAPTER_CONFIG
from pcctune.modeling.backends import Backend
from pcctune.modeling.build import resolve_source, saved_template
from pcctune.modeling.export import export_adapter, export_model, merge_adapter
from pcctune.modeling.template import PRESETS
from pcctune.orchestration.model_card import carry_section
from pcctune.orchestration.run_folder import RUN_CONFIG
from pcctune.training.config import RunConfig


def run_export(
    model: Path, output: Path, merge: bool, dtype: str, backend: Backend, console: Console, adapter_only: bool = False
) -> None:
    """``--merge`` folds a LoRA / QLoRA adapter into one model in ``dtype``; ``--adapter-only`` writes the adapter
    alone in ``dtype``; else re-save (with ``backend``)."""
    if merge and backend != "torch":
        raise PcctuneError("--merge and --backend are two steps: merge first, then export the merged folder")
    if adapter_only and (merge or backend != "torch"):
        raise PcctuneError("--adapter-only writes the adapter alone: no --merge, no --backend")
    check_output_folder(output)
    check_apart(model, output)
    if adapter_only:
        export_adapter(model, output, dtype)
        write_text(output / "README.md", adapter_card(model, output, dtype))
        console.print(f"adapter ({dtype}) -> {output}")
        return
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


def check_apart(model: Path, output: Path) -> None:
    """Refuse an ``--output`` that is the model's own folder, lies inside it or holds it: the export replaces
    ``--output``, and would delete the model it reads."""
    source, target = model.resolve(), output.resolve()
    if source == target or source in target.parents or target in source.parents:
        raise PcctuneError(f"--output {output} overlaps the model folder {model}: give a folder outside it")


def saved_run_config(model: Path) -> dict[str, Any] | None:
    """The ``config.yaml`` of the run whose stage folder (``RUN/STAGE/final``) ``model`` is, as saved; ``None`` for
    a folder outside a run."""
    run_config = model.parent.parent / RUN_CONFIG
    saved = yaml.safe_load(run_config.read_text(encoding="utf-8")) if run_config.is_file() else None
    return saved if isinstance(saved, dict) else None


def run_protocol(model: Path) -> str | None:
    """The STS protocol a run's stage folder was scored with (its config's ``eval_protocol``), so the adapter's
    card scores it alike; ``None`` for a folder outside a run."""
    saved = saved_run_config(model)
    return None if saved is None else str(saved.get("eval_protocol", RunConfig.model_fields["eval_protocol"].default))


def trained_from(model: Path) -> str:
    """The base that a run's stage folder (``RUN/STAGE/final``) puts its adapter on: the ``model`` of the run's
    ``config.yaml``, or, when that is a stage folder of an earlier run holding an adapter (a stage 2 that continued
    a stage-1 run's adapter), that run's base in turn; ``BASE`` for a folder outside a run."""
    seen: set[Path] = set()
    while (saved := saved_run_config(model)) is not None and model.resolve() not in seen:
        seen.add(model.resolve())
        if "model" not in saved:
            break
        started_from = Path(str(saved["model"]))
        if not (started_from / ADAPTER_CONFIG).is_file():
            return str(saved["model"])
        model = started_from
    return "BASE"


def adapter_card(model: Path, output: Path, dtype: str) -> str:
    """The adapter folder's README: where it came from and the line that scores it on its base."""
    template = saved_template(resolve_source(str(model)))
    preset = {text: name for name, text in PRESETS.items()}.get(template or "", f"'{template}'")
    flag = f" --template {preset}" if template else ""
    protocol = run_protocol(model)
    flag += f" --protocol {protocol}" if protocol else ""
    return "\n".join(
        [
            f"# LoRA adapter exported from `{model}` ({dtype})",
            "",
            "Only the adapter. Score it on the base it was trained on, unquantized, as the authors evaluate a QLoRA",
            "run (their `--load_kbit 16`):",
            "",
            "```bash",
            f"pcctune eval {trained_from(model)}{flag} --adapter {output}",
            "```",
            "",
        ]
    )
