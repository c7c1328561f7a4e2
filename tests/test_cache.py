"""What pcctune keeps between commands: verified on use, rebuilt when damaged, listed and cleared."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import assert_one_line_error, run_cli
from tests.test_split_zip import parts_installed  # noqa: F401  (a fixture)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PCCTUNE_CACHE", str(cache))
    return cache


def write_tiny_gguf(path: Path) -> Path:
    """A one-layer Llama in GGUF (float32 tensors, a character vocabulary), small enough to convert in a second."""
    import gguf

    hidden, ffn, heads = 16, 32, 2
    tokens = ["<unk>", "<s>", "</s>", *"abcdefghijklmnopqrstuvwxyz .,"]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types([2, 3, 3] + [1] * (len(tokens) - 3))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    rng = np.random.default_rng(0)
    shapes = {"token_embd": (len(tokens), hidden), "output": (len(tokens), hidden)}
    shapes |= {f"blk.0.attn_{n}": (hidden, hidden) for n in ("q", "k", "v", "output")}
    shapes |= {"blk.0.ffn_gate": (ffn, hidden), "blk.0.ffn_up": (ffn, hidden), "blk.0.ffn_down": (hidden, ffn)}
    for name, shape in shapes.items():
        writer.add_tensor(f"{name}.weight", rng.normal(0, 0.02, shape).astype(np.float32))
    for name in ("blk.0.attn_norm", "blk.0.ffn_norm", "output_norm"):
        writer.add_tensor(f"{name}.weight", np.ones(hidden, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _truncate(weights: Path) -> None:
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])


def _change_one_byte(weights: Path) -> None:
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _change_one_byte, Path.unlink], ids=["truncated", "changed", "missing"])
def test_a_damaged_gguf_cache_is_rebuilt_on_the_next_load_with_a_warning(tmp_path, caplog, damage):
    from pcctune.modeling.build import build_model
    from pcctune.modeling.gguf import gguf_to_folder

    gguf_file = write_tiny_gguf(tmp_path / "tiny.gguf")
    folder = gguf_to_folder(gguf_file)
    weights = folder / "model.safetensors"
    whole = weights.read_bytes()
    damage(weights)
    with caplog.at_level(logging.WARNING):
        assert gguf_to_folder(gguf_file) == folder
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(folder) in warnings[0], warnings
    assert weights.read_bytes() == whole
    assert build_model(str(gguf_file)).encode(["a cat sat."]).shape == (1, 16)


def test_a_cache_entry_is_checked_file_by_file_against_its_manifest(tmp_path):
    from pcctune.cache_entry import MANIFEST, cached_folder, damage

    builds = []

    def build(staging: Path) -> None:
        builds.append(staging)
        (staging / "sub").mkdir()
        (staging / "sub" / "weights.bin").write_bytes(b"\x01" * 100)

    entry = tmp_path / "cache" / "kind" / "entry"
    assert cached_folder(entry, build, "a test") == entry and damage(entry) is None
    assert cached_folder(entry, build, "a test") == entry and len(builds) == 1  # whole: used as it is
    (entry / "stray.txt").write_text("not from the build")
    assert "stray.txt is not in its manifest" in str(damage(entry))
    cached_folder(entry, build, "a test")
    assert len(builds) == 2 and not (entry / "stray.txt").exists()
    (entry / MANIFEST).write_text('{"format": 1, "files": {"sub/weights.bin"')  # cut short by a kill
    assert "no readable" in str(damage(entry))
    cached_folder(entry, build, "a test")
    assert len(builds) == 3 and damage(entry) is None
    cached_folder(entry, build, "a test", source="sha256 of what it is made from")  # made from another source
    assert len(builds) == 4 and damage(entry, "sha256 of what it is made from") is None
    assert [p.name for p in entry.parent.iterdir()] == ["entry"]  # no staging folder or lock file left


def test_cache_list_and_clear(tmp_path, private_cache, capsys):
    from pcctune.cache_entry import cached_folder, resume_folder
    from pcctune.modeling.gguf import gguf_to_folder

    gguf_folder = gguf_to_folder(write_tiny_gguf(tmp_path / "tiny.gguf"))
    cached_folder(private_cache / "packaged" / "model-1234", lambda f: (f / "w").write_bytes(b"x" * 2000), "unzipped")
    with resume_folder("eval-abc", "pcctune eval m --output r.json") as folder:
        assert folder is not None
        (folder / "vectors.npz").write_bytes(b"\x00" * 10)

    code, output = run_cli(["cache", "list"], capsys)
    assert code == 0, output
    for shown in ("gguf", gguf_folder.name, f"dequantized {tmp_path / 'tiny.gguf'}", "packaged", "2.2 KB"):
        assert shown in output, output
    assert "resume" in output and "pcctune eval m --output r.json" in output

    assert_one_line_error(*run_cli(["cache", "clear"], capsys), "say what to remove: --kind KIND or --all")
    assert_one_line_error(*run_cli(["cache", "clear", "--kind", "nope"], capsys), "holds no 'nope' entries")
    code, output = run_cli(["cache", "clear", "--kind", "gguf"], capsys)
    assert code == 0 and "removed 1 entries" in output, output
    assert not gguf_folder.exists() and (private_cache / "packaged" / "model-1234").is_dir()

    code, output = run_cli(["cache", "clear", "--all"], capsys)
    assert code == 0 and "removed 2 entries" in output, output
    assert not any(p for kind in private_cache.iterdir() for p in kind.iterdir())


def test_cache_clear_leaves_an_entry_in_use_alone(private_cache, capsys):
    from pcctune.cache_entry import resume_folder

    with resume_folder("eval-busy", "pcctune eval m --output r.json") as folder:
        assert folder is not None
        code, output = run_cli(["cache", "clear", "--all"], capsys)
        assert code == 0 and "removed 0 entries" in output and f"kept {folder}: in use" in output, output
        assert folder.is_dir()


def test_a_damaged_unzipped_packaged_model_is_unzipped_again_with_a_warning(parts_installed, tmp_path, caplog):  # noqa: F811
    from pcctune.modeling.split_zip import locate_parts, unzip_parts

    parts = locate_parts(parts_installed[0], "tiny.zip")
    assert parts is not None
    folder = tmp_path / "cache" / "packaged" / "tiny"
    weights = unzip_parts(parts, folder) / "weights.bin"
    whole = weights.read_bytes()
    _truncate(weights)
    with caplog.at_level(logging.WARNING):
        unzip_parts(parts, folder)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(folder) in warnings[0] and "weights.bin" in warnings[0], warnings
    assert weights.read_bytes() == whole


def test_an_entry_set_aside_is_renamed_away_in_one_step_before_it_is_deleted(tmp_path, monkeypatch, caplog):
    """A process reading the entry without its lock finds it whole or missing, never half deleted."""
    import shutil

    import pcctune.cache_entry as cache_entry

    entry = tmp_path / "kind" / "entry"
    entry.mkdir(parents=True)
    (entry / "a.bin").write_bytes(b"a")
    (entry / "b.bin").write_bytes(b"b")
    cache_entry.write_manifest(entry, "a test")
    deleted: list[Path] = []
    real_rmtree = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        assert cache_entry.damage(entry) == "missing"  # what a reader sees while the files go
        deleted.append(Path(path))
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    with caplog.at_level(logging.WARNING):
        cache_entry.set_aside(entry, "made from another source")
    assert len(deleted) == 1 and deleted[0].parent == entry.parent and deleted[0].name.startswith(".entry.")
    assert list(entry.parent.iterdir()) == [] and "setting aside" in caplog.text
    cache_entry.remove(entry)  # gone already: nothing to do


def test_a_gguf_file_is_read_alone_so_files_beside_it_cannot_change_its_cached_conversion(tmp_path, tiny_bert):
    """transformers prefers a ``tokenizer.json`` beside a GGUF file to the file's own vocabulary; the cache key holds
    the GGUF bytes only, so the conversion reads the file alone and two folders with the same file agree."""
    import shutil

    from pcctune.modeling.gguf import gguf_to_folder

    (tmp_path / "plain").mkdir()
    plain = write_tiny_gguf(tmp_path / "plain" / "tiny.gguf")
    crowded = tmp_path / "crowded" / "tiny.gguf"
    crowded.parent.mkdir()
    shutil.copyfile(plain, crowded)
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json"):  # another model's files beside it
        shutil.copyfile(tiny_bert / name, crowded.parent / name)
    folder = gguf_to_folder(crowded)  # one key for both files (the same bytes): build each in turn and compare
    from_crowded = json.loads((folder / "tokenizer.json").read_text())
    shutil.rmtree(folder)
    assert gguf_to_folder(plain) == folder
    assert json.loads((folder / "tokenizer.json").read_text()) == from_crowded
    assert "[CLS]" not in from_crowded["model"]["vocab"]  # the tiny BERT's vocabulary was not read


def test_a_cache_path_naming_a_file_is_refused_not_read_as_empty(tmp_path, monkeypatch, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "notes.txt"))
    for command in (["cache", "list"], ["cache", "clear", "--all"]):
        assert_one_line_error(*run_cli(command, capsys), f"cache {tmp_path / 'notes.txt'} (PCCTUNE_CACHE) is a file")
    assert (tmp_path / "notes.txt").read_text() == "mine"
