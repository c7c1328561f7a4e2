"""GGUF decoder files as ordinary Hugging Face folders.

transformers dequantizes a GGUF file at load time (16–53 s here) and refuses to
``save_pretrained`` the result. We convert once: load with ``gguf_file=``, drop the
``quantization_config``, save safetensors weights + config + tokenizer to a cache folder keyed
by the file's content hash, the versions of the libraries that dequantize it and pcctune's code
that calls them. Later loads take seconds, and a model built from it saves normally. The file is read alone (linked
into an empty folder): transformers would otherwise prefer a ``tokenizer.json`` or ``config.json`` lying beside it,
which the key does not hold.
The folder is a verified cache entry (``pcctune.cache_entry``): its weights are checked against its manifest on
every load, a damaged one is converted again, and two processes converting the same file at once convert it once.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pcctune.cache_entry import cached_folder
from pcctune.errors import PcctuneError, first_line
from pcctune.modeling.template import ensure_pad_token
from pcctune.paths import cache_root
from pcctune.provenance import code_digest, file_sha256, package_version

GGUF_MAGIC = b"GGUF"


def gguf_to_folder(gguf_path: str | Path) -> Path:
    """Return a cached Hugging Face folder with the dequantized weights of ``gguf_path``."""
    gguf_path = Path(gguf_path)
    if not gguf_path.is_file():
        raise PcctuneError(f"missing GGUF file: {gguf_path}")
    with gguf_path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise PcctuneError(f"{gguf_path} is not a GGUF file (it does not start with 'GGUF')")
    digest = dequantized_key(gguf_path)
    folder = cache_root() / "gguf" / f"{gguf_path.stem}-{digest[:16]}"
    try:
        return cached_folder(folder, lambda f: _dequantize(gguf_path, f), f"dequantized {gguf_path}", digest)
    except PcctuneError:
        raise
    except Exception as error:  # a truncated or unsupported GGUF file
        detail = first_line(error)
        raise PcctuneError(f"could not read GGUF file {gguf_path}: {detail}") from None


def dequantized_key(gguf_path: Path) -> str:
    """sha256 of what the dequantized folder depends on: the GGUF file's bytes, the libraries that read,
    dequantize and save it (transformers, gguf, torch, tokenizers) and the code that calls them
    (`pcctune.provenance.code_digest`)."""
    versions = {name: package_version(name) for name in ("transformers", "gguf", "torch", "tokenizers")}
    payload = {"file": file_sha256(gguf_path), "versions": versions, "code": code_digest(__name__)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _dequantize(gguf_path: Path, folder: Path) -> None:
    """Load ``gguf_path`` alone with transformers (which dequantizes it) and save it as a plain float model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"gguf_file": gguf_path.name}
    with tempfile.TemporaryDirectory() as alone:
        isolated = Path(alone) / gguf_path.name
        try:
            isolated.symlink_to(gguf_path.resolve())
        except OSError:  # no symbolic links here (Windows without the privilege): a copy
            shutil.copyfile(gguf_path, isolated)
        tokenizer = AutoTokenizer.from_pretrained(alone, **kwargs)
        model: Any = AutoModelForCausalLM.from_pretrained(alone, **kwargs)
    ensure_pad_token(tokenizer)
    # A dequantized model is a plain float model: forget the quantizer so it saves normally.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.is_quantized = False
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
