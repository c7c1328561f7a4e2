"""The README is short, opens with code that runs offline and prints what it says it prints, its results table and
verdict are generated from committed records, and its sentence-transformers snippet trains with the documented
settings."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from sentence_transformers import SentenceTransformerTrainingArguments as ArgsType

from pcctune.results import EvalResult

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


def test_the_readme_is_at_most_150_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def first_example() -> tuple[str, list[str]]:
    """The README's first code block, and the lines of the block after it: what the README says it prints."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    (language, code), (shown_as, printed) = blocks[0], blocks[1]
    assert language == "python" and shown_as == "text"
    return code, printed.splitlines()


def columns(line: str) -> tuple[str, int]:
    """A printed line's first column and where its second begins."""
    name, value = line.split()
    return name, line.index(value)


def run_first_example(code: str, senteval: Path, folder: Path) -> list[str]:
    """``code`` run as a user runs it, in a new process, offline, in an empty folder, with the SentEval folder
    named as ``make demo`` finds it (``PCCTUNE_DATA``): the lines it prints."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PCCTUNE_DATA": str(senteval), "PCCTUNE_CACHE": str(folder / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_the_first_example_prints_a_committed_records_numbers():
    """What the README says its first example prints is all-MiniLM-L6-v2's evaluation record (the packaged model,
    the default protocol, the seven STS test sets), each score as printed."""
    code, printed = first_example()
    record = EvalResult.from_disk(CLAIMS / "baselines" / "records" / "minilm_simcse.json")
    assert 'pcctune.build_model("all-MiniLM-L6-v2")' in code and "pcctune.evaluate(model)" in code
    assert record.model == "all-MiniLM-L6-v2" and record.protocol == "simcse-senteval" and record.sts
    assert [line.split() for line in printed] == [[task, f"{score:.2f}"] for task, score in record.sts.items()]


def test_the_first_example_runs_offline_and_prints_the_lines_the_readme_shows(tiny_bert, shared_senteval, tmp_path):
    """The first code block, with the packaged model's name swapped for a tiny random model's folder (its scores mean
    nothing), on the test suite's miniature SentEval folder: the lines and columns the README shows."""
    code, printed = first_example()
    lines = run_first_example(code.replace('"all-MiniLM-L6-v2"', repr(str(tiny_bert))), shared_senteval, tmp_path)
    assert [columns(line) for line in lines] == [columns(line) for line in printed]


@pytest.mark.slow
def test_the_first_example_runs_as_written(shared_senteval, tmp_path):
    """The first code block exactly as written: the packaged all-MiniLM-L6-v2, offline, on the miniature SentEval
    folder."""
    code, printed = first_example()
    lines = run_first_example(code, shared_senteval, tmp_path)
    assert [columns(line) for line in lines] == [columns(line) for line in printed]


def test_the_results_table_is_the_one_the_leakage_grids_records_give():
    """MiniLM's stage 2 with no test sentence seen and with the paper's filter: each loss's average at each level and
    Pearson − the loss with its simultaneous interval, the header naming its method, level and family."""
    from reproductions.leakage.report import readme_rows as generated_rows

    rows, expected = readme_rows(), generated_rows()
    assert len(expected) == 6 and all("Bonferroni 99.375 % simultaneous, family of 8" in c for c in expected["loss"])
    wrong = {label: (rows.get(label), cells) for label, cells in expected.items() if rows.get(label) != cells}
    assert not wrong, wrong


def test_the_verdict_is_the_one_the_leakage_grids_records_give():
    """The encoder's verdict paragraph is generated from the records, word for word: the search seeds each level
    used, each tie with its widest simultaneous bound, each win with its size or its sign only, and what the records
    show of CoSENT, AnglE and the contrastive stage 2 (below the base model, best at the last step, best at the first
    dev evaluation)."""
    from reproductions.leakage.report import readme_verdict

    verdict = readme_verdict()
    assert verdict in README.read_text(encoding="utf-8").split("\n")
    assert "search seeds 101–102 at `sentence`, 101 at `pair`" in verdict
    assert "and their growth where a winner binds (Pearson's 3x2" in verdict  # the grown winners are named
    assert "The verdict covers `sentence` and `pair`; `normalized`" in verdict  # and what the other levels lack
    from reproductions.leakage.cells import LOSSES
    from reproductions.leakage.report import NAMES

    assert all(NAMES[loss] in verdict for loss in LOSSES[1:])  # each comparison read: a tie (its bound) or a win
    assert ("Pearson ties" not in verdict) or "a bound on the difference, not an equivalence" in verdict


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


def test_the_summary_writes_the_front_pages_table_and_verdict_from_the_records(tmp_path):
    """The leakage summary (run after every record) rewrites the front page's results: a stale table row and a stale
    verdict come back as the records give them, and nothing else on the page moves."""
    from reproductions.leakage.report import write_front_page

    text = README.read_text(encoding="utf-8")
    lines = text.split("\n")
    row = next(k for k, line in enumerate(lines) if line.startswith("| Pearson ("))
    verdict = next(k for k, line in enumerate(lines) if line.startswith("**Verdict on the encoder**"))
    lines[row], lines[verdict] = "| Pearson (Pcc-tuning) | 99.00 | 99.00 |", "**Verdict on the encoder** (stale)."
    stale = tmp_path / "README.md"
    stale.write_text("\n".join(lines), encoding="utf-8")
    write_front_page(stale)
    assert stale.read_text(encoding="utf-8") == text


def test_the_decoder_sentence_reads_the_decoder_claims_records():
    """The front page's words on the decoder claim are what its records give (``front_page_phrase`` of
    ``reproductions/decoder_losses/tables.py``: the records landed until all have, then the verdict)."""
    import argparse

    from reproductions.decoder_losses import design, tables

    args = argparse.Namespace(output=design.HERE, runs=ROOT / "runs" / "decoder_losses", quick=False, model=None)
    args.recipe, args.data = ROOT / "configs" / "paper_recipe_smollm2_cpu.yaml", None
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert tables.front_page_phrase(args) in text
