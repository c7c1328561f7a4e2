"""``pcctune push``: a trained model to the Hugging Face Hub, through sentence-transformers' own ``push_to_hub``.

The folder is uploaded as pcctune saved it (``local_model_path``), so its model card, with the pcctune
section (scores, stages, leakage report, config), is the one the Hub shows. Two files read differently on the Hub
than on this machine and are uploaded rewritten, the folder itself left as it is: the card's usage snippets load
the model by its Hub id instead of the folder's path, and a LoRA adapter's ``adapter_config.json`` names its base
model by Hub id instead of the local path peft wrote (a base with no Hub twin is refused, with the way to merge
it). A run folder pushes its last stage's ``final`` model.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from huggingface_hub.errors import HfHubHTTPError, HFValidationError
from huggingface_hub.utils import validate_repo_id
from rich.console import Console

from pcctune.errors import PcctuneError, first_line
from pcctune.io import write_text
from pcctune.modeling.adapters import ADAPTER_CONFIG, BASE_KEY, adapter_base, adapter_config_naming, base_on_hub
from pcctune.modeling.build import build_model
from pcctune.modeling.saving import MODULES_FILE, is_saved_model
from pcctune.orchestration.model_card import load_by
from pcctune.orchestration.run_folder import RESULTS
from pcctune.results import RunResult

CARD = "README.md"


def model_folder(source: Path) -> Path:
    """The model folder to push: ``source`` itself, or the last stage's ``final`` of a run folder (``RUN/STAGE/final``),
    found in ``source`` itself, not where the run was first written: a copied or moved run pushes its own model."""
    if is_saved_model(source):
        return source
    if (source / RESULTS).is_file():
        stages = RunResult.from_disk(source / RESULTS).stages
        saved_at = Path(stages[-1].final_dir) if stages else None
        here = None if saved_at is None else source / saved_at.parent.name / saved_at.name
        if here is not None and is_saved_model(here):
            return here
    raise PcctuneError(f"{source} is neither a saved model ({MODULES_FILE}) nor a finished run folder ({RESULTS})")


def hub_adapter_config(folder: Path) -> str | None:
    """``folder``'s ``adapter_config.json`` with its base model named by Hub id (``None`` without an adapter); a
    base the Hub has no twin of (a local folder, a packaged GGUF decoder) is refused before anything is sent."""
    if not (folder / ADAPTER_CONFIG).is_file():
        return None
    base = adapter_base(folder)
    if base is None:
        raise PcctuneError(
            f"{folder / ADAPTER_CONFIG} is not a peft adapter config naming its base model: write the base model's "
            f"Hub id into it as {BASE_KEY}, or save the model again"
        )
    hub = base_on_hub(base)
    if hub is None:
        raise PcctuneError(
            f"{folder}'s LoRA adapter sits on {base}, a base model the Hub does not hold: push it merged "
            f"(pcctune export {folder} --merge --output MERGED, then pcctune push MERGED)"
        )
    return json.dumps(adapter_config_naming(folder, hub), indent=2, ensure_ascii=False) + "\n"


def hub_files(folder: Path, repo_id: str) -> dict[str, str]:
    """The files of ``folder`` that read otherwise on the Hub, by name: its card and its adapter config."""
    files = {}
    card = folder / CARD
    if card.is_file():
        files[CARD] = load_by(card.read_text(encoding="utf-8"), folder, repo_id)
    adapter_config = hub_adapter_config(folder)
    if adapter_config is not None:
        files[ADAPTER_CONFIG] = adapter_config
    return files


@contextmanager
def upload_view(folder: Path, rewritten: dict[str, str]) -> Iterator[Path]:
    """A temporary folder that reads as ``folder`` with the top-level files in ``rewritten`` (name → text) written
    anew: every other file linked, not copied (copied where links are not allowed)."""
    with tempfile.TemporaryDirectory(prefix="pcctune-push-") as staging:
        root = Path(staging)
        for path in sorted(folder.rglob("*")):
            target = root / path.relative_to(folder)
            if path.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            elif target.parent != root or path.name not in rewritten:
                try:
                    target.symlink_to(path.resolve())
                except OSError:
                    shutil.copy2(path, target)
        for name, text in rewritten.items():
            write_text(root / name, text)
        yield root


def run_push(source: Path, repo_id: str, private: bool, token: str | None, console: Console) -> str:
    """Upload the model of ``source`` to ``repo_id``; return the commit URL the Hub gives. A repo id the Hub refuses
    is refused before anything loads; a Hub that is unreachable or refuses the upload is one line."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise PcctuneError(f"--repo-id {repo_id!r}: {first_line(error)}") from None
    folder = model_folder(source)
    rewritten = hub_files(folder, repo_id)
    model = build_model(str(folder))
    with upload_view(folder, rewritten) as view:
        try:
            url = model.push_to_hub(repo_id, token=token, private=private, local_model_path=str(view), exist_ok=True)
        except (ConnectionError, HfHubHTTPError) as error:  # offline mode, no network, a refused token or repo
            raise PcctuneError(f"could not push {folder} to {repo_id}: {first_line(error)}") from None
    console.print(f"{folder} -> {url}")
    return str(url)
