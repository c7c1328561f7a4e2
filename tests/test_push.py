"""``pcctune push``, tested at huggingface_hub's API object: nothing of pcctune is faked; and the adapter that
``pcctune export --adapter-only`` writes for sharing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import huggingface_hub
import pytest

from pcctune.errors import PcctuneError
from pcctune.modeling.adapters import AdapterConfig, attach_adapter
from pcctune.modeling.build import build_model
from pcctune.modeling.registry import PACKAGED_MODELS
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
        folder = Path(kwargs["folder_path"])
        card, adapter = folder / "README.md", folder / "adapter_config.json"
        calls["upload_folder"] = {
            **kwargs,
            "files": {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()},
            "card": card.read_text(encoding="utf-8") if card.is_file() else None,
            "adapter_config": json.loads(adapter.read_text(encoding="utf-8")) if adapter.is_file() else None,
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
    assert upload["repo_id"] == "someone/tiny"
    saved = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert upload["files"] == saved  # every file, subfolders too, as saved (this card names no folder to rewrite)
    assert "README.md" in upload["files"] and "modules.json" in upload["files"]
    assert "someone/tiny/commit/abc" in output


def test_push_of_something_else_is_one_line(hub, tmp_path, capsys):
    """Not a model folder and not a finished run: one line, and nothing reaches the Hub."""
    code, output = run_cli(["push", str(tmp_path), "--repo-id", "someone/x"], capsys)
    assert_one_line_error(code, output, "neither a saved model")
    assert not hub


def test_the_uploaded_card_loads_the_model_by_its_hub_id(hub, tiny_bert, tmp_path, capsys, monkeypatch):
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
    during: list[str] = []
    upload = huggingface_hub.HfApi.upload_folder

    def watched(self, **kwargs):  # the folder's own card while the upload runs
        during.append((folder / "README.md").read_text(encoding="utf-8"))
        return upload(self, **kwargs)

    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", watched)
    code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny"], capsys)
    assert code == 0, output
    assert during == [local]  # never rewritten, even while the upload runs
    uploaded = hub["upload_folder"]["card"]
    assert uploaded.count('SentenceTransformer("someone/tiny"') == 2 and "# Download from the 🤗 Hub" in uploaded
    assert (folder / "README.md").read_text(encoding="utf-8") == local


def _lora_model(base: Path, folder: Path) -> dict:
    model = build_model(str(base))
    attach_adapter(model, AdapterConfig(kind="lora", r=2, alpha=4))
    save_model(model, folder)
    return json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))


def test_a_lora_model_on_a_packaged_encoder_is_uploaded_on_its_hub_twin(hub, tiny_bert, tmp_path, capsys, monkeypatch):
    """peft writes the local path the base loaded from; the Hub copy names the packaged encoder's Hub id (the
    same weights), every other file and the folder itself as they were."""
    minilm = PACKAGED_MODELS["all-minilm-l6-v2"]
    monkeypatch.setitem(PACKAGED_MODELS, "all-minilm-l6-v2", dataclasses.replace(minilm, locate=lambda: tiny_bert))
    folder = tmp_path / "model"
    saved = _lora_model(tiny_bert, folder)
    assert Path(saved["base_model_name_or_path"]).resolve() == tiny_bert.resolve()
    before = (folder / "adapter_config.json").read_bytes()
    code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny"], capsys)
    assert code == 0, output
    upload = hub["upload_folder"]
    assert upload["adapter_config"] == {**saved, "base_model_name_or_path": "sentence-transformers/all-MiniLM-L6-v2"}
    assert (folder / "adapter_config.json").read_bytes() == before
    assert upload["files"]["adapter_model.safetensors"] == (folder / "adapter_model.safetensors").read_bytes()


def test_a_lora_model_on_a_hub_id_is_uploaded_as_saved(hub, tiny_bert, tmp_path, capsys):
    folder = tmp_path / "model"
    saved = _lora_model(tiny_bert, folder)
    named = {**saved, "base_model_name_or_path": "someone/base"}  # as peft writes a base loaded by its Hub id
    (folder / "adapter_config.json").write_text(json.dumps(named), encoding="utf-8")
    monkeypatch = pytest.MonkeyPatch()
    with monkeypatch.context() as patch:  # the push loads the model here first: from the local base
        patch.setattr("pcctune.orchestration.push.build_model", lambda _: build_model(str(tiny_bert)))
        code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny"], capsys)
    assert code == 0, output
    assert hub["upload_folder"]["adapter_config"] == named


@pytest.mark.parametrize(
    ("base", "hub"),
    [("someone/base", "someone/base"), ("gpt2", "gpt2"), ("C:\\Users\\me\\minilm", None), ("models\\base", None)],
)
def test_a_base_is_on_the_hub_only_when_named_as_the_hub_names_models(base, hub):
    from pcctune.modeling.adapters import base_on_hub

    assert base_on_hub(base) == hub


@pytest.mark.parametrize("packaged_gguf", [False, True])
def test_a_lora_model_on_a_base_the_hub_lacks_is_refused_with_the_merge(
    hub, tiny_llama, tmp_path, capsys, monkeypatch, packaged_gguf
):
    """A local folder, or a packaged GGUF decoder (its dequantized weights are not the Hub's): one line naming the
    merge, and nothing reaches the Hub."""
    if packaged_gguf:
        smollm2 = PACKAGED_MODELS["smollm2-135m"]
        monkeypatch.setitem(PACKAGED_MODELS, "smollm2-135m", dataclasses.replace(smollm2, locate=lambda: tiny_llama))
    folder = tmp_path / "model"
    _lora_model(tiny_llama, folder)
    capsys.readouterr()  # the save's own progress output
    code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny"], capsys)
    assert_one_line_error(code, output, "--merge")
    assert not hub


@pytest.mark.parametrize("damage", ["not json", "[]", '{"r": 2}'])
def test_a_lora_model_whose_adapter_config_names_no_base_is_refused(hub, tiny_bert, tmp_path, capsys, damage):
    """An adapter config that cannot be read, or names no base: one line naming the file, nothing sent."""
    folder = tmp_path / "model"
    _lora_model(tiny_bert, folder)
    (folder / "adapter_config.json").write_text(damage, encoding="utf-8")
    capsys.readouterr()
    code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny"], capsys)
    assert_one_line_error(code, output, "base_model_name_or_path")
    assert "None" not in output and not hub


def test_an_adapter_exported_alone_names_a_packaged_base_by_its_hub_id(tiny_bert, tmp_path, capsys, monkeypatch):
    minilm = PACKAGED_MODELS["all-minilm-l6-v2"]
    monkeypatch.setitem(PACKAGED_MODELS, "all-minilm-l6-v2", dataclasses.replace(minilm, locate=lambda: tiny_bert))
    saved = _lora_model(tiny_bert, tmp_path / "model")
    args = ["export", str(tmp_path / "model"), "--adapter-only", "--output", str(tmp_path / "a")]
    code, output = run_cli(args, capsys)
    assert code == 0, output
    exported = json.loads((tmp_path / "a" / "adapter_config.json").read_text(encoding="utf-8"))
    assert exported == {**saved, "base_model_name_or_path": "sentence-transformers/all-MiniLM-L6-v2"}


def test_a_copied_run_folder_pushes_its_own_model_not_the_one_where_it_was_written(tiny_bert, tmp_path):
    import shutil

    from pcctune.orchestration.push import model_folder
    from pcctune.orchestration.run_folder import RESULTS
    from pcctune.results import RunResult
    from tests.conftest import stage_record

    original = tmp_path / "original"
    save_model(build_model(str(tiny_bert)), original / "stage1-pcc" / "final")
    final = str(original / "stage1-pcc" / "final")
    record = RunResult(protocol="simcse-senteval", data_dir="data", seed=1, config={}, stages=[stage_record(None)])
    record.stages[0].final_dir = final  # as a run writes it: where it was first saved
    record.to_disk(original / RESULTS)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    assert model_folder(copy) == copy / "stage1-pcc" / "final"
    shutil.rmtree(copy / "stage1-pcc")
    with pytest.raises(PcctuneError, match="neither a saved model"):
        model_folder(copy)  # its own model gone: the original is not pushed in its place


@pytest.mark.parametrize("repo_id", ["bad id!!", ""])
def test_a_repo_id_the_hub_refuses_is_one_line_before_anything_loads(repo_id, hub, tmp_path, capsys):
    code, output = run_cli(["push", str(tmp_path / "nothing-here"), "--repo-id", repo_id], capsys)
    assert_one_line_error(code, output, f"--repo-id {repo_id!r}: Repo id must use")
    assert not hub


def test_an_unreachable_hub_is_one_line(tiny_bert, tmp_path, capsys, monkeypatch):
    from huggingface_hub.errors import OfflineModeIsEnabled

    def offline(self, repo_id, **kwargs):
        raise OfflineModeIsEnabled("Cannot reach https://huggingface.co/api/repos/create: offline mode is enabled.")

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", offline)
    folder = tmp_path / "model"
    save_model(build_model(str(tiny_bert)), folder)
    code, output = run_cli(["push", str(folder), "--repo-id", "someone/tiny"], capsys)
    errors = [line for line in output.splitlines() if "error:" in line]  # beside the weights' loading bar
    assert code == 2 and "Traceback" not in output and len(errors) == 1
    assert "could not push" in errors[0] and "offline mode is enabled" in errors[0]
