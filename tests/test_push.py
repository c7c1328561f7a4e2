"""``pcctune push``, tested at huggingface_hub's API object: nothing of pcctune is faked."""

from __future__ import annotations

import huggingface_hub
import pytest

from pcctune.modeling.build import build_model
from pcctune.modeling.saving import save_model
from tests.conftest import assert_one_line_error, run_cli


@pytest.fixture()
def hub(monkeypatch):
    calls: dict[str, dict] = {}

    """huggingface_hub's API object with its two network calls recorded instead of sent."""

    def create_repo(self, repo_id, **kwargs):
        calls["create_repo"] = {"repo_id": repo_id, **kwargs}
        return huggingface_hub.RepoUrl(f"https://huggingface.co/{repo_id}")

    def upload_folder(self, **kwargs):
        folder = __import__("pathlib").Path(kwargs["folder_path"])
        card = folder / "README.md"
        calls["upload_folder"] = {
            **kwargs,
            "files": sorted(p.name for p in folder.iterdir()),
            "card": card.read_text(encoding="utf-8") if card.is_file() else None,
        }
        url = f"https://huggingface.co/{kwargs['repo_id']}/commit/abc"
        return huggingface_hub.CommitInfo(commit_url=url, commit_message="", commit_description="", oid="abc")

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", create_repo)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", upload_folder)
    return calls


def test_push_uploads_the_saved_folder_with_its_card(hub, tiny_llama, tmp_path, capsys):
    folder = tmp_path / "model"
    save_model(build_model(str(tiny_llama), template="eol"), folder)
    (folder / "README.md").write_text("# a card pcctune wrote\n")
    code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny", "--private"], capsys)
    assert code == 0, output
    assert hub["create_repo"]["repo_id"] == "someone/tiny" and hub["create_repo"]["private"] is True
    upload = hub["upload_folder"]
    assert upload["repo_id"] == "someone/tiny" and upload["folder_path"] == str(folder)
    assert "README.md" in upload["files"] and "modules.json" in upload["files"]
    assert "someone/tiny/commit/abc" in output


def test_push_of_something_else_is_one_line(hub, tmp_path, capsys):
    """Not a model folder and not a finished run: one line, and nothing reaches the Hub."""
    code, output = run_cli(["push", str(tmp_path), "--repo-id", "someone/x"], capsys)
    assert_one_line_error(code, output, "neither a saved model")
    assert not hub


def test_the_uploaded_card_loads_the_model_by_its_hub_id(hub, tiny_bert, tmp_path, capsys):
    """Both usage snippets of the card (sentence-transformers' and pcctune's) name the Hub repository in the upload;
    the folder's own card, which names the folder, is left as it was."""
    from pcctune.orchestration.model_card import LOADING, add_pcctune_section

    folder = tmp_path / "model"
    save_model(build_model(str(tiny_bert)), folder)
    usage = '# Download from the 🤗 Hub\nmodel = SentenceTransformer("sentence_transformers_model_id")\n'
    (folder / "README.md").write_text(f"# a card\n\n```python\n{usage}```\n", encoding="utf-8")  # as ST writes it
    add_pcctune_section(folder, f"<!-- pcctune -->\n## pcctune\n\n{LOADING}\n")
    local = (folder / "README.md").read_text(encoding="utf-8")
    assert local.count('SentenceTransformer("') == 2 and "sentence_transformers_model_id" not in local
    assert "Download from the" not in local  # a folder is not downloaded
    code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny"], capsys)
    assert code == 0, output
    uploaded = hub["upload_folder"]["card"]
    assert uploaded.count('SentenceTransformer("someone/tiny"') == 2 and "# Download from the 🤗 Hub" in uploaded
    assert (folder / "README.md").read_text(encoding="utf-8") == local
