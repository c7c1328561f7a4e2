"""What a cache key of a 7B-sized model costs: its weights hashed as loaded, against its files' hashes, cold and warm.

A cache that stands in for a model's computation (a run's base scores, an unfinished evaluation's vectors) is keyed
by the model (``pcctune.modeling.fingerprint.model_digest``). A model read from a folder is keyed by its files'
content hashes (``pcctune.modeling.weight_files``), read once and remembered under each file's inode, size and times;
a model that was not is keyed by one sha256 pass over its tensors. On a folder laid out as Mistral-7B's weights in
bf16 (its tensor names and shapes, ``--layers`` of them, in safetensors shards of random bytes, with its
``config.json``), in this process:

1. ``tensors``: ``add_tensors`` over every tensor, shard by shard, each shard read into memory first (untimed): the
   pass over the weights as loaded;
2. ``files, cold``: the folder's content hashes with nothing remembered (an empty ``PCCTUNE_CACHE``) and its files
   dropped from the page cache first (``posix_fadvise``), plus the tensors its safetensors headers list;
3. ``files, warm``: the same again, its hashes remembered.

The folder is made in a temporary folder and deleted afterwards (``--folder DIR`` reads one already made and keeps
it). Run it under ``nice`` on a quiet machine: the hashing shares the CPU with everything else. The record names the
CPU by vendor, family, model and kernel flags (``pcctune.cpu_kind``).

    nice python benchmarks/results/cache_key/cache_key.py --output benchmarks/results/cache_key   # 14.2 GB
    nice python benchmarks/results/cache_key/cache_key.py --only tensors --output OUT    # the tensor pass alone

A one-off measurement: it lives beside its record, outside the benchmarks run in CI, and follows their pattern
(``benchmarks/_common.py``: ``--quick``, ``--summarize``, ``runs.json``, ``table.md``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/, for the pattern every script shares
from _common import Benchmark, Measured, Rows, run  # noqa: E402

SHAPE = {"vocab": 32000, "hidden": 4096, "inner": 14336, "kv": 1024}
"""Mistral-7B's vocabulary, hidden size, MLP width and key/value width (8 of its 32 heads of 128)."""
SHARD_BYTES = 4_000_000_000
"""A shard's size at most, as ``save_pretrained`` writes them (``max_shard_size``: 5 GB)."""


def mistral_tensors(layers: int, shape: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """The names and shapes of Mistral-7B's backbone tensors (``MistralModel``), ``layers`` of its decoder layers."""
    hidden, inner, kv = shape["hidden"], shape["inner"], shape["kv"]
    tensors: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (shape["vocab"], hidden)}
    for layer in range(layers):
        at = f"model.layers.{layer}"
        tensors |= {f"{at}.self_attn.{p}_proj.weight": (hidden, hidden) for p in ("q", "o")}
        tensors |= {f"{at}.self_attn.{p}_proj.weight": (kv, hidden) for p in ("k", "v")}
        tensors |= {f"{at}.mlp.{p}_proj.weight": (inner, hidden) for p in ("gate", "up")}
        tensors[f"{at}.mlp.down_proj.weight"] = (hidden, inner)
        tensors |= {f"{at}.{norm}.weight": (hidden,) for norm in ("input_layernorm", "post_attention_layernorm")}
    return tensors | {"model.norm.weight": (hidden,)}


def write_folder(folder: Path, layers: int, shape: dict[str, int]) -> int:
    """``folder`` as a bf16 Mistral-shaped model: its ``config.json`` and safetensors shards of random bytes (a
    valid layout: an 8-byte header length, the JSON header, the data). Returns the bytes of weights written."""
    folder.mkdir(parents=True, exist_ok=True)
    shards: list[dict[str, tuple[int, ...]]] = [{}]
    for name, dims in mistral_tensors(layers, shape).items():
        if shards[-1] and sum(2 * int(np.prod(d)) for d in shards[-1].values()) + 2 * int(np.prod(dims)) > SHARD_BYTES:
            shards.append({})
        shards[-1][name] = dims
    random, total = np.random.default_rng(0), 0
    for index, shard in enumerate(shards):
        header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
        offset = 0
        for name, dims in shard.items():
            size = 2 * int(np.prod(dims))
            header[name] = {"dtype": "BF16", "shape": list(dims), "data_offsets": [offset, offset + size]}
            offset += size
        encoded = json.dumps(header).encode()
        with (folder / f"model-{index + 1:05d}-of-{len(shards):05d}.safetensors").open("wb") as handle:
            handle.write(len(encoded).to_bytes(8, "little") + encoded)
            for written in range(0, offset, 1 << 28):
                handle.write(random.bytes(min(1 << 28, offset - written)))
        total += offset
    config = {"model_type": "mistral", "hidden_size": shape["hidden"], "intermediate_size": shape["inner"]}
    config |= {"num_hidden_layers": layers, "vocab_size": shape["vocab"], "num_attention_heads": shape["hidden"] // 128}
    config |= {"num_key_value_heads": shape["kv"] // 128, "torch_dtype": "bfloat16", "architectures": ["MistralModel"]}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return total


def drop_from_page_cache(folder: Path) -> None:
    """Ask the kernel to forget the folder's cached pages (``POSIX_FADV_DONTNEED``), so the next read is from disk."""
    for path in folder.rglob("*"):
        if path.is_file():
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(descriptor)


def seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def tensor_pass(folder: Path) -> float:
    """Seconds of ``add_tensors`` over every tensor of the folder, each shard read into memory first (untimed)."""
    from safetensors.torch import load_file

    from pcctune.modeling.fingerprint import add_tensors

    def one_shard(shard: Path) -> float:
        tensors = load_file(shard)
        return seconds(lambda: add_tensors(hashlib.sha256(), tensors))

    return sum(one_shard(shard) for shard in sorted(folder.glob("*.safetensors")))


def files_key(folder: Path) -> Callable[[], object]:
    """The files' part of the key of a model read from ``folder``: its files' content hashes and the tensors its
    safetensors headers list."""
    from pcctune.modeling.weight_files import backbone_files, content_hashes, safetensors_shapes

    def key() -> object:
        files = backbone_files([folder])
        return content_hashes(files), safetensors_shapes(path for _, path in files)

    return key


def files_rows(folder: Path) -> Rows:
    """The files' part of the key, cold then warm, with an empty cache of remembered hashes of its own."""
    kept = os.environ.get("PCCTUNE_CACHE")
    with tempfile.TemporaryDirectory(prefix="cache-key-hashes-") as cache:
        os.environ["PCCTUNE_CACHE"] = cache
        try:
            key = files_key(folder)
            drop_from_page_cache(folder)
            cold = seconds(key)
            warm = seconds(key)
        finally:
            if kept is None:
                os.environ.pop("PCCTUNE_CACHE", None)
            else:
                os.environ["PCCTUNE_CACHE"] = kept
    return [
        {"label": "files, cold (nothing remembered, not in the page cache)", "seconds": cold},
        {"label": "files, warm (hashes remembered)", "seconds": warm},
    ]


def machine() -> dict[str, Any]:
    """The CPU as ``pcctune.cpu_kind`` names it, with its logical CPUs and the load when the measurement began."""
    from pcctune.cpu_kind import this_cpu

    return {"cpu": this_cpu().identity, "cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2)}


def measure(args: argparse.Namespace) -> Measured:
    shape = {name: getattr(args, name) or default for name, default in SHAPE.items()}
    made = args.folder is None
    folder = Path(tempfile.mkdtemp(prefix="cache-key-7b-")) if made else Path(args.folder)
    try:
        if made:
            print(f"writing a Mistral-shaped folder ({args.layers} layers) to {folder}", flush=True)
            write_folder(folder, args.layers, shape)
        gigabytes = sum(p.stat().st_size for p in folder.glob("*.safetensors")) / 1e9
        rows: Rows = []
        if "tensors" in args.only:
            drop_from_page_cache(folder)
            rows.append({"label": "tensors as loaded, one sha256 pass", "seconds": tensor_pass(folder)})
        if "files" in args.only:
            rows += files_rows(folder)
        for row in rows:
            row |= {"gb": round(gigabytes, 2), "gb_per_s": round(gigabytes / row["seconds"], 2)}
            print(f"{row['label']}: {row['seconds']:.3f} s", flush=True)
    finally:
        if made:
            shutil.rmtree(folder, ignore_errors=True)
    host = machine()
    settings = (
        f"CPU: {host['cpu']}; {host['cpus']} logical CPUs, load {host['load_1min']} at the start; a Mistral-shaped "
        f"bf16 folder of {args.layers} layers ({gigabytes:.2f} GB of safetensors); "
        f"command: python benchmarks/results/cache_key/cache_key.py {' '.join(sys.argv[1:])}"
    )
    return Measured(rows, settings, {"machine": host})


def table(rows: Rows, details: dict[str, Any]) -> str:
    lines = ["| what is hashed | seconds | GB | GB/s |", "|---|---:|---:|---:|"]
    lines += [f"| {r['label']} | {r['seconds']:.3f} | {r['gb']:.2f} | {r['gb_per_s']:.2f} |" for r in rows]
    return "\n".join(lines)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=("tensors", "files"), nargs="+", default=["tensors", "files"])
    parser.add_argument("--folder", default=None, help="a Mistral-shaped folder made earlier (kept)")
    parser.add_argument("--layers", type=int, default=32, help="decoder layers (Mistral-7B: 32)")
    for name in SHAPE:
        parser.add_argument(f"--{name}", type=int, default=None, help=f"default: Mistral-7B's {SHAPE[name]}")


QUICK = {"layers": 1, "vocab": 1000, "hidden": 256, "inner": 512, "kv": 128}
BENCHMARK = Benchmark.of(__name__, quick=QUICK)

if __name__ == "__main__":
    run(BENCHMARK)
