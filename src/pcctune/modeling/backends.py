"""ONNX and OpenVINO exports of a model's backbone, and encoding through them.

sentence-transformers' own route (``export_optimized_onnx_model``, ``backend="onnx"``) goes
through optimum, whose only releases need ``transformers<4.58`` (optimum-onnx 0.1.0) or
``transformers`` 5.5 with torch 2.15 (optimum-intel 2.2): neither installs next to pcctune's
pins. So pcctune exports with torch's own exporter (``torch.onnx.export(dynamo=True)``) into
sentence-transformers' folder layout and input / output names — ``onnx/model.onnx`` and
``openvino/openvino_model.xml`` next to a plain sentence-transformers model, inputs
``input_ids`` / ``attention_mask`` (/ ``token_type_ids``), output ``last_hidden_state`` — the
files ``SentenceTransformer(folder, backend="onnx" | "openvino")`` reads where optimum installs.

Only the backbone is exported: tokenization (the template included, as a chat template) and
pooling stay in sentence-transformers, so an exported model encodes exactly what the torch model
encodes. ``use_backend`` swaps the backbone of a loaded model for an onnxruntime session or a
compiled OpenVINO model, which is how ``pcctune eval --backend onnx`` scores the export.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import torch
from sentence_transformers import SentenceTransformer
from torch import nn
from typing_extensions import override

from pcctune.errors import PcctuneError
from pcctune.modeling.template import TemplateTransformer

Backend = Literal["torch", "onnx", "openvino"]
ONNX_FILE = Path("onnx") / "model.onnx"
OPENVINO_FILE = Path("openvino") / "openvino_model.xml"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"
EXTRA = "pip install 'pcctune[export]'  (onnx, onnxscript, onnxruntime, openvino)"


class _Graph(nn.Module):
    """The backbone as a function of positional tensors (what the exporter traces)."""

    def __init__(self, backbone: nn.Module, names: list[str]) -> None:
        super().__init__()
        self.backbone, self.names = backbone, names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return self.backbone(**dict(zip(self.names, tensors, strict=True))).last_hidden_state


def _exportable(model: SentenceTransformer) -> Any:
    module = model[0]
    if isinstance(module, TemplateTransformer) and not module.native:
        raise PcctuneError(
            "only a model that plain sentence-transformers loads can be exported to ONNX / OpenVINO "
            "(a 4-bit model: `pcctune export --merge` first; a sentence cut-off or continuous prompts: not exportable)"
        )
    return module


def export_onnx(model: SentenceTransformer, folder: Path) -> Path:
    """Write ``folder/onnx/model.onnx``: the backbone, dynamic in batch and sequence length."""
    _require("onnx export", ["onnx", "onnxscript"])
    module = _exportable(model)
    sample = module.preprocess(["a short sentence", "a second and somewhat longer sentence for the trace"])
    names = [name for name in INPUT_NAMES if name in sample]
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    path = folder / ONNX_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.inference_mode(False), torch.no_grad():
        torch.onnx.export(
            _Graph(module.auto_model, names).eval(),  # the wrapper too: torch warns of a graph traced in training mode
            tuple(sample[name] for name in names),
            str(path),
            input_names=names,
            output_names=[OUTPUT_NAME],
            dynamic_shapes=(tuple({0: batch, 1: sequence} for _ in names),),  # one entry: the *tensors tuple
            dynamo=True,
            verbose=False,
        )
    return path


def export_openvino(onnx_path: Path, folder: Path) -> Path:
    """Convert an exported ONNX backbone to OpenVINO IR at ``folder/openvino/openvino_model.xml``."""
    _require("openvino export", ["openvino"])
    import openvino

    path = folder / OPENVINO_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    openvino.save_model(openvino.convert_model(str(onnx_path)), str(path), compress_to_fp16=False)  # keep fp32
    return path


class RuntimeBackbone(nn.Module):
    """Stands in for a Transformer module's backbone: runs the exported graph, returns ``last_hidden_state``."""

    def __init__(self, backend: Backend, path: Path, config: Any) -> None:
        super().__init__()
        self.backend, self.config = backend, config
        self.register_buffer("anchor", torch.zeros(0), persistent=False)  # gives the model a device
        if backend == "onnx":
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = torch.get_num_threads()  # the threads torch would use
            self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            self.input_names = [node.name for node in self.session.get_inputs()]
        else:
            import openvino

            # f32: on CPUs with bf16 units OpenVINO would otherwise compute in bf16
            settings = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": torch.get_num_threads()}
            self.compiled = openvino.Core().compile_model(str(path), "CPU", settings)
            self.input_names = [node.get_any_name() for node in self.compiled.inputs]

    @override
    def forward(self, **inputs: Any) -> dict[str, torch.Tensor]:
        feeds = {name: inputs[name].detach().cpu().numpy() for name in self.input_names}
        if self.backend == "onnx":
            (hidden,) = self.session.run([OUTPUT_NAME], feeds)
        else:
            hidden = self.compiled(feeds)[self.compiled.output(0)]
        return {OUTPUT_NAME: torch.from_numpy(hidden)}


def use_backend(model: SentenceTransformer, folder: Path, backend: Backend) -> SentenceTransformer:
    """``model`` (loaded from ``folder``) with its backbone running on ``backend``'s export in ``folder``."""
    if backend == "torch":
        return model
    _require(f"{backend} backend", ["onnxruntime"] if backend == "onnx" else ["openvino"])
    path = folder / (ONNX_FILE if backend == "onnx" else OPENVINO_FILE)
    if not path.is_file():
        raise PcctuneError(
            f"no {backend} export in {folder} (missing {path.relative_to(folder)}); "
            f"write one with: pcctune export MODEL --backend {backend} --output {folder}"
        )
    module: Any = model[0]
    module.model = RuntimeBackbone(backend, path, module.auto_model.config)
    return model


def _require(what: str, packages: list[str]) -> None:
    import importlib.util

    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        raise PcctuneError(f"the {what} needs {', '.join(missing)}: {EXTRA}")
