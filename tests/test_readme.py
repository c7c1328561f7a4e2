"""The README is short, every headline number in it is the number of a committed record, and its sentence-transformers
snippet trains with the documented settings."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import yaml
from sentence_transformers import SentenceTransformerTrainingArguments as ArgsType

from pcctune.evaluation.tables import mean_std_cell
from pcctune.results import BenchmarkResult, EvalResult, RunResult

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
CLAIMS = ROOT / "reproductions"


def readme_rows() -> dict[str, list[str]]:
    """Every markdown table row of the README: first cell → the other cells."""
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def avg(value: float) -> str:
    return f"{value:.2f}"


def encoder_rows() -> dict[str, list[str]]:
    """Before and after Pcc-tuning's stage 2 on the two encoders."""
    minilm = RunResult.from_disk(CLAIMS / "minilm_stage2" / "records" / "ready.json").sts_by_stage
    mpnet_before = EvalResult.from_disk(CLAIMS / "baselines" / "records" / "mpnet_simcse.json").sts
    mpnet = RunResult.from_disk(CLAIMS / "stage2_quality" / "records" / "mpnet_transferred.json").sts_by_stage
    return {
        "all-MiniLM-L6-v2": [avg(minilm["before"]["avg"]), avg(minilm["pcc"]["avg"])],
        "all-mpnet-base-v2": [avg(mpnet_before["avg"]), avg(mpnet["pcc"]["avg"])],
    }


def decoder_rows() -> dict[str, list[str]]:
    """The decoder table's rows: the papers' protocol, mean ± std over the row's seeds."""
    record = BenchmarkResult.from_disk(CLAIMS / "decoder_full" / "runs.json")
    return {row.label: [mean_std_cell([seed["paper"]["avg"] for seed in row.details["seeds"]])] for row in record.rows}


def leakage_rows() -> dict[str, list[str]]:
    """MiniLM's stage 2 with no test sentence seen and with the paper's filter: each loss's seeds, and at each level
    its average and difference from Pearson."""
    from reproductions.leakage.leakage import readme_rows

    return readme_rows()


def test_the_readme_is_at_most_150_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_every_headline_number_is_read_from_a_committed_record():
    rows = readme_rows()
    expected = {**encoder_rows(), **decoder_rows(), **leakage_rows()}
    assert len(expected) >= 8
    wrong = {label: (rows.get(label), cells) for label, cells in expected.items() if rows.get(label) != cells}
    assert not wrong, wrong


def test_the_readme_names_the_two_setup_commands_and_the_quick_check():
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text
    assert "pcctune eval all-MiniLM-L6-v2" in text
    assert "source: pairs" in text and "pcctune.PearsonLoss" in text


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_the_plain_trainer_snippet_uses_the_documented_settings_and_warns_about_the_pearson_group():
    """The README's sentence-transformers script trains as ``configs/minilm_stage2.yaml`` does: its batch (the
    Pearson group), epochs, learning rate and dev selection, the last short batch dropped, no accumulation."""
    text = README.read_text(encoding="utf-8")
    [snippet] = [block for block in python_blocks(text) if "SentenceTransformerTrainingArguments(" in block]
    call = next(
        node.value
        for node in ast.parse(snippet).body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "SentenceTransformerTrainingArguments"
    )
    dev = SimpleNamespace(primary_metric="sick-trial+stsb-dev_spearman")
    names = {"SentenceTransformerTrainingArguments": ArgsType, "dev": dev}
    args = eval(compile(ast.Expression(call), "README.md", "eval"), names)  # the README's own call, run
    stage = yaml.safe_load((ROOT / "configs" / "minilm_stage2.yaml").read_text(encoding="utf-8"))["stages"][0]
    assert args.per_device_train_batch_size == stage["batch_size"] and args.num_train_epochs == stage["epochs"]
    assert abs(args.learning_rate - stage["learning_rate"]) < 1e-6 and args.eval_steps == stage["eval_steps"]
    assert args.dataloader_drop_last and args.load_best_model_at_end and args.gradient_accumulation_steps == 1
    assert args.metric_for_best_model == f"eval_{dev.primary_metric}" and "evaluator=dev" in snippet
    assert "gradient_accumulation_steps" in text.split(snippet)[1][:600]  # the warning follows the snippet
    guide = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert snippet in python_blocks(guide)  # one snippet, shown in both places
