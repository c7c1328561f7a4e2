"""What a cached result was computed from: the model as loaded, and the code and machine that computed it.

A cache that stands in for a computation (a base model's test scores, an interrupted evaluation's vectors) may hand
back only what computing again would give. Its key therefore holds everything that decides the result:

- ``model_digest``: the model **as loaded**, not the name or folder it was loaded from: every parameter and buffer of
  every module (a LoRA adapter's and its base's alike, quantized or not), the tokenizer as it tokenizes, each
  module's settings (an adapter's too) and the backbone's config. Reading the loaded tensors answers what names and
  folders cannot: an adapter folder whose base was overwritten in place, a Hub id that two caches
  (``HF_HUB_CACHE``, ``SENTENCE_TRANSFORMERS_HOME``) hold at different commits, a Hub model updated during the load.
  A model just read from local folders (``read_from``) is keyed by their files' content hashes instead, remembered
  between commands (`pcctune.modeling.weight_files`), and by the tensors no file holds.
- ``computation_identity``: the library versions that touch the numbers, the device the model runs on (a CPU by
  vendor, family, model and kernel flags, a GPU by name), the CPU speed settings and thread count in force, the
  kernel limits set in the environment, and a digest of the pcctune code that computes
  (`pcctune.provenance.code_digest`).

Where a part cannot be read (a tensor on the ``meta`` device, no tokenizer, weights in an exported ONNX or OpenVINO
graph), ``model_digest`` is ``None`` and the caller keeps no cache. The cost, one sha256 pass over the weights as
loaded (in threads) or over a folder's files once, is measured in docs/reliability.md ("What a key holds").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer

from pcctune.host_settings import host_settings
from pcctune.modeling.backends import RuntimeBackbone
from pcctune.modeling.weight_files import backbone_files, content_hashes, held_by_files, safetensors_shapes
from pcctune.provenance import code_digest, device_name, library_versions

KERNEL_ENVIRONMENT = (
    "ONEDNN_MAX_CPU_ISA",
    "ATEN_CPU_CAPABILITY",
    "MKL_ENABLE_INSTRUCTIONS",
    "DNNL_MAX_CPU_ISA",
    "MKL_CBWR",
    "ONEDNN_DEFAULT_FPMATH_MODE",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
)
"""Environment variables that change which kernels torch runs or the precision they keep, so the float rounding of
a result."""
PATH_KEYS = (
    "name_or_path",
    "_name_or_path",
    "tokenizer_file",
    "vocab_file",
    "merges_file",
    "cache_dir",
    "base_model_name_or_path",
)
"""Settings that name where a model or tokenizer was read from, not what it holds: left out of its digest."""


def model_digest(model: SentenceTransformer, read_from: Sequence[Path] = ()) -> str | None:
    """sha256 of ``model`` as loaded (module docstring); ``None`` when a part of it cannot be read.

    ``read_from``: the folders ``model`` was just read from (`pcctune.modeling.weight_files.model_folders`), by a
    caller that has changed none of its tensors since. The content hashes of the weight files its backbone is loaded
    from then stand for the tensors they hold (each tensor's name, dtype and shape still in the digest), and only
    what no file holds (a new head, continuous prompts) is read: a key of a 7B model in well under a second once its
    files' hashes are remembered."""
    if any(getattr(module, "backend", "torch") != "torch" for module in model) or any(
        isinstance(module, RuntimeBackbone) for module in model.modules()
    ):
        return None  # the weights live in an exported graph (ONNX, OpenVINO), not in tensors: not digested here
    described = describe_modules(model)
    if described is None:
        return None
    files = backbone_files(read_from)
    shapes = safetensors_shapes(path for _, path in files)
    prefixes = [
        prefix for module in model if (prefix := getattr(getattr(module, "auto_model", None), "base_model_prefix", ""))
    ]
    tensors = model.state_dict(keep_vars=False)
    held = {
        name
        for name, tensor in tensors.items()
        if isinstance(tensor, torch.Tensor) and held_by_files(name, tuple(tensor.shape), shapes, prefixes)
    }
    digest = hashlib.sha256()
    if not add_tensors(digest, tensors, held):
        return None
    digest.update(json.dumps([described, content_hashes(files)], sort_keys=True, default=str).encode())
    return digest.hexdigest()


def add_tensors(digest: Any, tensors: Mapping[str, Any], held: Collection[str] = ()) -> bool:
    """Feed each tensor's name, dtype, shape and the sha256 of its bytes (hashed in threads) to ``digest``, or
    ``file`` for a tensor a file of the model's folders holds (``held``); false (and the digest unfinished) where one
    is not a tensor or has no data (``meta``)."""
    if any(not isinstance(tensor, torch.Tensor) or tensor.is_meta for tensor in tensors.values()):
        return False
    read = [name for name in tensors if name not in held]
    workers = max(1, min(len(read), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pcctune-hash") as pool:
        hashes = dict(zip(read, pool.map(lambda name: tensor_sha256(tensors[name]), read), strict=True))
    for name, tensor in tensors.items():
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|{hashes.get(name, 'file')}\0".encode())
    return True


def tensor_sha256(tensor: torch.Tensor) -> str:
    """The sha256 of a tensor's bytes (copied to the CPU where it lives elsewhere)."""
    data = tensor.detach().to("cpu").contiguous().reshape(-1)
    return hashlib.sha256(data.view(torch.uint8).numpy().data).hexdigest()


def describe_modules(model: SentenceTransformer) -> list[Any] | None:
    """Each module's class and settings, the backbone's config and the tokenizer's state; ``None`` without a
    tokenizer."""
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        return None
    modules: list[Any] = []
    for module in model:
        get_config: Any = getattr(module, "get_config_dict", None)
        config = get_config() if callable(get_config) else {}
        backbone = getattr(getattr(module, "auto_model", None), "config", None)
        modules.append(
            {
                "class": f"{type(module).__module__}.{type(module).__qualname__}",
                "config": _without_paths(config),
                "backbone": _without_paths(backbone.to_dict()) if backbone is not None else None,
                "attention": getattr(backbone, "_attn_implementation", None),
                "adapters": adapter_settings(getattr(module, "auto_model", None)),
            }
        )
    model_settings = {
        "max_seq_length": model.max_seq_length,
        "prompts": model.prompts,
        "default_prompt_name": model.default_prompt_name,
        "similarity": model.similarity_fn_name,
    } | ({"truncate_dim": model.truncate_dim} if model.truncate_dim is not None else {})
    return [modules, model_settings, tokenizer_state(tokenizer)]


def adapter_settings(backbone: Any) -> dict[str, Any] | None:
    """Each PEFT adapter's settings (its kind, rank, ``lora_alpha``, target modules, dropout…) on ``backbone``: LoRA
    adds ``B A x`` scaled by ``lora_alpha / r`` to a layer's output (Hu et al. 2021, eq. 3 and §4.1), so two adapters
    with the same tensors and another alpha are two models. ``None`` without adapters."""
    configs = getattr(backbone, "peft_config", None)
    if not configs:
        return None
    return {name: _without_paths(_plain(config.to_dict())) for name, config in sorted(configs.items())}


def _plain(value: Any) -> Any:
    """``value`` with its sets sorted into lists (PEFT keeps ``target_modules`` as a set): the same settings dump to
    the same text."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(_plain(item) for item in value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


RUNTIME_STATE = ("truncation", "padding")
"""The parts of a fast tokenizer's serialized pipeline that each call sets for its batch (``tokenizer(...,
truncation=True, padding=True)``): the state of the last call, not the tokenizer."""


def tokenizer_state(tokenizer: Any) -> dict[str, Any]:
    """What decides a tokenizer's output: a fast tokenizer's whole pipeline (``tokenizer.json``'s content without
    ``RUNTIME_STATE``), else its vocabulary; its special tokens, padding and truncation sides, maximum length and chat
    template. A bare ``tokenizers.Tokenizer`` (a ``StaticEmbedding`` model's) is its pipeline alone."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None and hasattr(tokenizer, "to_str"):
        return {"class": type(tokenizer).__qualname__, "pipeline": pipeline_state(tokenizer)}
    return {
        "class": type(tokenizer).__qualname__,
        "pipeline": pipeline_state(backend) if backend is not None else sorted(tokenizer.get_vocab().items()),
        "special": tokenizer.special_tokens_map,
        "padding_side": tokenizer.padding_side,
        "truncation_side": tokenizer.truncation_side,
        "model_max_length": tokenizer.model_max_length,
        "chat_template": getattr(tokenizer, "chat_template", None),
        "init": _without_paths(dict(tokenizer.init_kwargs)),
    }


def pipeline_state(backend: Any) -> dict[str, Any]:
    """A fast tokenizer's serialized pipeline without ``RUNTIME_STATE``: the same before and after the model
    encodes."""
    pipeline = json.loads(backend.to_str())
    return {key: value for key, value in pipeline.items() if key not in RUNTIME_STATE}


def _without_paths(settings: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in settings.items() if key not in PATH_KEYS}


def computation_identity(device: torch.device, *modules: str) -> dict[str, Any]:
    """The code, libraries and machine settings a result computed by ``modules`` (pcctune's, dotted) on ``device``
    (where the model runs: `pcctune.provenance.device_name`) depends on."""
    return {
        "versions": library_versions() | {"device": device_name(device)},
        "host_settings": asdict(host_settings()),
        "threads": torch.get_num_threads(),
        "float32_matmul": float32_matmul_settings(),
        "kernel_environment": {name: os.environ[name] for name in KERNEL_ENVIRONMENT if name in os.environ},
        "code": code_digest(*modules),
    }


def float32_matmul_settings() -> dict[str, Any]:
    """The process's float32 matrix-product precision (a caller's ``torch.set_float32_matmul_precision("high")`` lets
    kernels round through TF32 or bf16) and CUDA's TF32 switches."""
    return {
        "precision": torch.get_float32_matmul_precision(),
        "cuda_matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_tf32": torch.backends.cudnn.allow_tf32,
    }


def computation_key(
    settings: dict[str, Any], model: SentenceTransformer, *modules: str, read_from: Sequence[Path] = ()
) -> str | None:
    """sha256 of ``settings`` (what the caller chose: tasks, protocol…), ``model`` as loaded (``read_from``: see
    ``model_digest``) and the ``computation_identity`` of ``modules``; ``None`` when the model cannot be digested
    (no cache then)."""
    weights = model_digest(model, read_from)
    if weights is None:
        return None
    return settings_key({"settings": settings, "model": weights}, model.device, *modules)


def settings_key(payload: dict[str, Any], device: torch.device, *modules: str) -> str:
    """sha256 of ``payload`` and the ``computation_identity`` of ``modules`` on ``device``: the key of a result whose
    model is named by ``payload`` (its digest, or a run folder's fingerprint where the folder holds the model)."""
    identified = payload | {"identity": computation_identity(device, *modules)}
    return hashlib.sha256(json.dumps(identified, sort_keys=True, default=str).encode()).hexdigest()
