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
        calls["upload_folder"] = {
            **kwargs,
            "files": sorted(p.name for p in __import__("pathlib").Path(kwargs["folder_path"]).iterdir()),
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
