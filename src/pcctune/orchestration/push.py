"""``pcctune push``: a trained model to the Hugging Face Hub, through sentence-transformers' own ``push_to_hub``.

The folder is uploaded as pcctune saved it (``local_model_path``), so its model card, with the pcctune
section (scores, stages, leakage report, config), is the one the Hub shows; for the upload, the card's usage
snippets load the model by its Hub id instead of the folder's path (the folder's own card is put back after). A run
folder pushes its last stage's ``final`` model.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from pcctune.errors import PcctuneError
from pcctune.io import write_text
from pcctune.modeling.build import build_model
from pcctune.modeling.saving import MODULES_FILE, is_saved_model
from pcctune.orchestration.model_card import load_by
from pcctune.orchestration.run_folder import RESULTS
from pcctune.results import RunResult


def model_folder(source: Path) -> Path:
    """The model folder to push: ``source`` itself, or the last stage's ``final`` of a run folder."""
    if is_saved_model(source):
        return source
    if (source / RESULTS).is_file():
        stages = RunResult.from_disk(source / RESULTS).stages
        if stages and is_saved_model(Path(stages[-1].final_dir)):
            return Path(stages[-1].final_dir)
    raise PcctuneError(f"{source} is neither a saved model ({MODULES_FILE}) nor a finished run folder ({RESULTS})")


def run_push(source: Path, repo_id: str, private: bool, token: str | None, console: Console) -> str:
    """Upload the model of ``source`` to ``repo_id``; return the commit URL the Hub gives."""
    folder = model_folder(source)
    model = build_model(str(folder))
    card = folder / "README.md"
    saved = card.read_text(encoding="utf-8") if card.is_file() else None
    if saved is not None:
        write_text(card, load_by(saved, folder, repo_id))
    try:
        url = model.push_to_hub(repo_id, token=token, private=private, local_model_path=str(folder), exist_ok=True)
    finally:
        if saved is not None:
            write_text(card, saved)
    console.print(f"{folder} -> {url}")
    return str(url)
