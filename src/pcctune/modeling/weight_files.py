"""The files a model was read from: their content hashes, remembered between commands, and the tensors they hold.

A key of a model read from files (`pcctune.modeling.fingerprint.model_digest` with ``read_from``) holds the sha256
of the weight files its backbone is loaded from instead of one pass over the weights as loaded. The hashes cost
nothing where the files name them already, and one read otherwise:

- a file in the Hugging Face cache is a link to ``blobs/NAME``, and ``NAME`` is the sha256 of its content (a large
  file's) or git's hash of it (a small file's): the name is the hash;
- a local file's sha256 is read once, in threads (one file each), and remembered in pcctune's cache
  (``hashes/PATH-STATE``, a verified entry: `pcctune.cache_entry`) under its path, inode, size, modification and
  change times (`pcctune.provenance.file_state`): a file rewritten, copied over, or given back its old time by
  ``cp -p`` or ``tar`` is another state, and read again.

What no file holds (a new head, continuous prompts, a weight whose shape the load changed) is told apart by the names
and shapes a safetensors file lists in its header, read without its tensors (``held_by_files``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import struct
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pcctune.cache_entry import cached_folder, remove
from pcctune.errors import PcctuneError
from pcctune.io import write_json
from pcctune.modeling.adapters import ADAPTER_CONFIG, adapter_base
from pcctune.modeling.build import resolve_source
from pcctune.modeling.registry import packaged_key
from pcctune.modeling.saving import is_saved_model, saved_modules
from pcctune.paths import cache_root
from pcctune.provenance import file_sha256, file_state

logger = logging.getLogger(__name__)

KIND = "hashes"
HASH_FILE = "sha256.json"
BLOB_NAME = re.compile(r"[0-9a-f]{64}|[0-9a-f]{40}")
"""A Hugging Face cache blob's name: the sha256 of a large (LFS) file's content, git's sha1 of a small one's."""
TensorShapes = dict[str, tuple[int, ...]]


def model_folders(spec: str) -> list[Path]:
    """The local folders a model named ``spec`` is read from, as `pcctune.modeling.build.resolve_source` resolves it:
    the folder itself and, for a PEFT adapter folder (``adapter_config.json``), its base where that is a local
    folder. Nothing for a Hub id (the snapshot it loaded cannot be told afterwards), a packaged name (even beside a
    folder of that name) or a GGUF file: their keys read the weights as loaded."""
    if packaged_key(spec) is not None or Path(spec).suffix == ".gguf":
        return []
    try:
        source = resolve_source(spec)
    except PcctuneError:
        return []
    if source.origin != "local":
        return []
    folder = Path(source.path)
    folders = [folder]
    adapter = folder / ADAPTER_CONFIG
    if adapter.is_file():
        base = adapter_base(folder)
        if base is None or not Path(base).expanduser().is_dir():
            return []  # the base comes from the Hub or an unknown place: read from the weights as loaded
        folders.append(Path(base).expanduser().resolve())
    return folders


def content_hashes(files: Sequence[tuple[str, Path]]) -> dict[str, str]:
    """The content hash of each named file (``remembered_hash``), read in threads, one file each."""
    workers = max(1, min(len(files), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pcctune-hash") as pool:
        hashes = list(pool.map(remembered_hash, [path for _, path in files]))
    return {name: digest for (name, _), digest in zip(files, hashes, strict=True)}


def remembered_hash(path: Path) -> str:
    """``path``'s content hash: a Hugging Face cache blob's name, a small file's sha256 (read each time, with its
    state), else its sha256 remembered in pcctune's cache under the file's path and state."""
    real = path.resolve()
    if real.parent.name == "blobs" and BLOB_NAME.fullmatch(real.name):
        return f"blob:{real.name}"
    state = file_state(real)
    if state is None:
        raise PcctuneError(f"{path} cannot be read")
    if state[-1] is not None:
        return state[-1]
    return _remembered_sha256(real, json.dumps(state))


def _remembered_sha256(path: Path, state: str) -> str:
    named = hashlib.sha256(str(path).encode()).hexdigest()[:24]
    entry = cache_root() / KIND / f"{named}-{hashlib.sha256(state.encode()).hexdigest()[:16]}"

    def build(staging: Path) -> None:
        for stale in entry.parent.glob(f"{named}-*"):  # the same file's hashes in earlier states
            remove(stale)
        write_json({"path": str(path), "state": state, "sha256": file_sha256(path)}, staging / HASH_FILE)

    try:
        cached_folder(entry, build, f"the sha256 of {path}")
        kept = json.loads((entry / HASH_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, PcctuneError) as error:  # a cache that cannot be written: read, keep nothing
        logger.warning("the hash of %s is not kept in the cache (%s); reading it", path, error)
        return file_sha256(path)
    if kept.get("path") != str(path) or kept.get("state") != state:
        return file_sha256(path)
    return str(kept["sha256"])


def safetensors_shapes(files: Iterable[Path]) -> TensorShapes:
    """The name and shape of every tensor the safetensors ``files`` hold, read from their headers (the first 8 bytes
    give the header's length, the header is JSON): no tensor is read."""
    shapes: TensorShapes = {}
    for path in files:
        with path.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
        shapes |= {name: tuple(entry["shape"]) for name, entry in header.items() if name != "__metadata__"}
    return shapes


def backbone_files(folders: Sequence[Path]) -> list[tuple[str, Path]]:
    """The safetensors files a backbone is loaded from: those at the top of each folder and of a saved model's first
    module's folder (``modules.json``), not deeper (a checkpoint's, another module's), so a weight the load drew at
    random is never taken for a tensor of a file it did not read. Each is named by its folder's position and its path
    inside it: the names a key holds, whatever the folders are called. Everything else a model reads (its configs,
    its tokenizer) is described as loaded (`pcctune.modeling.fingerprint.describe_modules`)."""
    found: dict[Path, str] = {}
    for index, folder in enumerate(folders):
        first = saved_modules(folder)[:1] if is_saved_model(folder) else []
        for place in [folder, *(folder / str(module.get("path", "")) for module in first)]:
            for path in sorted(place.glob("*.safetensors")):
                found.setdefault(path, f"{index}/{path.relative_to(folder).as_posix()}")
    return [(name, path) for path, name in found.items()]


BACKBONE = re.compile(r"^0\.(?:auto_model|model)\.")
"""How a sentence-transformers model prefixes its backbone's tensor names: the first module (``0.``) and the
attribute holding the backbone. Every other tensor (a head, a dense layer, continuous prompts) is small and read."""


def held_by_files(name: str, shape: tuple[int, ...], files: TensorShapes, prefixes: Sequence[str]) -> bool:
    """Whether the backbone's tensor ``name`` of ``shape`` is one a file lists under the same shape: named as the
    file names it, with or without the backbone's prefix (``bert.``, ``model.``: ``prefixes``), a LoRA layer's base
    weight as the plain layer's (``.base_layer.``), an adapter's tensor as PEFT saves it (``base_model.model.``,
    without the adapter's name)."""
    if not BACKBONE.match(name):
        return False
    tail = BACKBONE.sub("", name)
    plain = tail.replace(".base_layer.", ".")
    adapter = re.sub(r"\.(lora_[AB]|lora_embedding_[AB]|lora_magnitude_vector)\.[^.]+\.", r".\1.", tail)
    candidates = {plain, tail, f"base_model.model.{adapter}"}
    for prefix in prefixes:
        candidates |= {f"{prefix}.{plain}", plain.removeprefix(f"{prefix}.")}
    return any(files.get(candidate) == shape for candidate in candidates)
