"""The shape of the code: imports point down the layers, functions fit a page, one owner per fact."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "pcctune"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(src_root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(src_root), "PATH": ""},
        timeout=120,
    )


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is installed by `make lint` / the lint extra")
def test_layers_contract_holds_and_catches_an_upward_import(tmp_path):
    kept = _lint_imports(ROOT / "src")
    assert kept.returncode == 0, kept.stdout[-2000:]
    shutil.copytree(SRC, tmp_path / "pcctune")
    bottom = tmp_path / "pcctune" / "data" / "sts.py"
    bottom.write_text(bottom.read_text() + "\n\ndef _upward():\n    import pcctune.orchestration.pipeline  # noqa\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0 and "pcctune.data.sts" in broken.stdout


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is installed by `make lint` / the lint extra")
def test_the_cli_contract_catches_a_command_that_reaches_below_orchestration(tmp_path):
    shutil.copytree(SRC, tmp_path / "pcctune")
    cli = tmp_path / "pcctune" / "cli" / "evaluation.py"
    cli.write_text(cli.read_text() + "\n\ndef _below():\n    import pcctune.modeling.build  # noqa\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0 and "The CLI is a door" in broken.stdout and "BROKEN" in broken.stdout


def test_no_function_is_longer_than_fifty_lines():
    long = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 50:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, long


def test_pcctune_imports_no_private_name_of_another_package():
    """A library's private names (a leading underscore) may change in any release: pcctune uses its public API."""
    private = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and not (node.module or "").startswith("pcctune"):
                parts = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
                if any(part.startswith("_") and not part.startswith("__") for part in parts):
                    private.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module} import ...")
    assert not private, private


def test_every_console_is_the_plain_one_that_prints_split_names_as_text(capsys):
    """rich turns ":train:" into an emoji; pcctune prints "STSBenchmark:train:" in its audit lines and tables, so
    every console it makes is ``plain_console`` (emoji codes off)."""
    from pcctune.console import plain_console

    plain_console().print("STSBenchmark:train: 5749 pairs")
    assert "STSBenchmark:train: 5749 pairs" in capsys.readouterr().out
    made = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in SRC.rglob("*.py")
        if path.name != "console.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Console"
    ]
    assert not made, made


SHIPPED_CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


def test_configs_folder_is_found():
    assert len(SHIPPED_CONFIGS) >= 5


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_validates(path):
    from pcctune.losses.registry import LOSSES
    from pcctune.training.config import load_config

    config = load_config(path)
    assert config.stages and all(stage.loss in LOSSES for stage in config.stages)


def test_the_losses_page_lists_the_loss_registry():
    from pcctune.losses.registry import losses_markdown

    assert losses_markdown() in (ROOT / "docs" / "losses.md").read_text(encoding="utf-8")


def test_unknown_loss_in_a_config_names_the_registry(tmp_path):
    from pcctune.errors import PcctuneError
    from pcctune.training.config import load_config

    path = tmp_path / "c.yaml"
    path.write_text("model: m\nstages: [{name: s, loss: nope, data: {source: stage2}}]\n")
    with pytest.raises(PcctuneError, match="unknown loss 'nope'; choose from infonce, pearson"):
        load_config(path)


def _is_result_file(path: Path) -> bool:
    """A committed JSON that is a pcctune result: not the bound's score file, not a saved adapter's own config, not
    a measurement written by its own script on another machine (``device_*.json``), not a file of a model kept in the
    tree (a saved model's ``modules.json`` at or above it) nor that model's note of its base (``base.json``)."""
    kept_model = any((parent / "modules.json").is_file() for parent in path.parents if ROOT in parent.parents)
    return (
        path.name != "bound_sts.json"
        and not path.name.startswith("device_")
        and not (path.parent / "adapter_model.safetensors").is_file()
        and not kept_model
        and not (path.name == "base.json" and (path.parent / "model" / "modules.json").is_file())
    )


COMMITTED_RESULTS = sorted(
    p
    for folder in ("reproductions", "benchmarks/results")
    for p in (ROOT / folder).rglob("*.json")
    if _is_result_file(p)
)


@pytest.mark.parametrize("path", COMMITTED_RESULTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_results_load_through_the_typed_records(path):
    from pcctune.results import AuditResult, BenchmarkResult, EvalResult, RunResult, load_result

    record = load_result(path)
    if isinstance(record, EvalResult):
        assert record.sections()
    elif isinstance(record, RunResult) and path.parent.name == "search":  # a dev-only search trial: no test set
        assert not record.sts_by_stage and all(stage.best_dev_spearman is not None for stage in record.stages)
    elif isinstance(record, RunResult):
        assert record.sts_by_stage and all("avg" in row for row in record.sts_by_stage.values())
    elif isinstance(record, AuditResult):
        assert record.sources
    else:
        assert isinstance(record, BenchmarkResult) and record.rows


SPACES = [*(ROOT / "configs" / "sweeps").glob("*.yaml"), *(ROOT / "reproductions").rglob("*_space.yaml")]


@pytest.mark.parametrize("path", sorted(SPACES), ids=lambda p: p.name)
def test_shipped_search_spaces_apply_to_the_minilm_config(path):
    from pcctune.orchestration.search_space import load_space
    from pcctune.training.config import load_config

    space = load_space(path)
    for pick in (0, -1):
        values = {
            key: (spec.choices[pick] if spec.choices else (spec.low if pick == 0 else spec.high))
            for key, spec in space.items()
        }
        config = load_config(ROOT / "configs" / "minilm_stage2.yaml", values)
        assert config.stages[0].learning_rate == values["stages.0.learning_rate"]
