"""Exports on tiny models: `pcctune export --backend` then `pcctune eval --backend`.

The real-model check (all-MiniLM-L6-v2, the seven full test sets, within 0.05 of torch, and the
speed ratio) is recorded in benchmarks/results/backends/.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli


@pytest.fixture(scope="module")
def exported(tiny_llama, tmp_path_factory):
    """A tiny templated decoder saved by pcctune, then exported with ONNX and OpenVINO backbones."""
    from pcctune.modeling.build import build_model

    root = tmp_path_factory.mktemp("backends")
    build_model(str(tiny_llama), template="eol").save(str(root / "model"))
    return root


@pytest.mark.filterwarnings("error:Exporting a model while it is in training mode")  # the graph is traced in eval mode
def test_export_then_eval_on_onnx_and_openvino_gives_the_torch_numbers(exported, mini_senteval, capsys):
    code, output = run_cli(
        ["export", str(exported / "model"), "--backend", "openvino", "--output", str(exported / "out")], capsys
    )
    assert code == 0, output
    assert (exported / "out" / "onnx" / "model.onnx").is_file()
    assert (exported / "out" / "openvino" / "openvino_model.xml").is_file()
    modules = json.loads((exported / "out" / "modules.json").read_text())
    assert all(m["type"].startswith("sentence_transformers.") for m in modules)
    scores = {}
    for backend in ("torch", "onnx", "openvino"):
        result = exported / f"{backend}.json"
        code, output = run_cli(
            [
                "eval",
                str(exported / "out"),
                "--data",
                str(mini_senteval),
                "--backend",
                backend,
                "--output",
                str(result),
            ],
            capsys,
        )
        assert code == 0, output
        scores[backend] = json.loads(result.read_text())["sts"]
    assert len(scores["torch"]) == 8  # seven tasks and avg
    for backend in ("onnx", "openvino"):
        for task, value in scores["torch"].items():
            assert scores[backend][task] == pytest.approx(value, abs=0.05), (backend, task)


def test_eval_on_a_backend_that_was_not_exported_names_the_export_command(exported, mini_senteval, capsys):
    code, output = run_cli(["eval", str(exported / "model"), "--data", str(mini_senteval), "--backend", "onnx"], capsys)
    assert code == 2 and "pcctune export" in output and "--backend onnx" in output
