"""A saved pcctune model with a template runs through MTEB's model interface unchanged."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer

from pcctune.data.sts import STSPair
from pcctune.evaluation.mteb_bridge import use_local_data
from pcctune.modeling.build import build_model
from pcctune.modeling.template import apply_template
from tests.conftest import SENTENCES


def _mteb_scores(model: SentenceTransformer, name: str, pairs: list[STSPair]) -> dict:
    """MTEB's own evaluator on MTEB task ``name`` filled with ``pairs`` (no results cache)."""
    import mteb
    from datasets import Dataset, DatasetDict

    rows = {key: [getattr(p, key) for p in pairs] for key in ("sentence1", "sentence2", "score")}
    task = use_local_data(mteb.get_task(name), DatasetDict({"test": Dataset.from_dict(rows)}))
    result = mteb.evaluate(model, task, cache=None, show_progress_bar=False)
    return dict(result.task_results[0].scores["test"][0])


def test_mteb_encodes_through_the_saved_template(tiny_llama, tmp_path):
    build_model(str(tiny_llama), template="eol").save(str(tmp_path / "saved"))
    model = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True)
    pairs = [STSPair(SENTENCES[i], SENTENCES[i + 6], float(i)) for i in range(6)]
    scores = _mteb_scores(model, "STSBenchmark", pairs)

    a = model.encode([p.sentence1 for p in pairs])
    b = model.encode([p.sentence2 for p in pairs])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    expected = spearmanr(cos, [p.score for p in pairs]).statistic
    assert scores["cosine_spearman"] == pytest.approx(expected, abs=1e-9)

    # Without the template the embeddings differ, so MTEB really used the saved template.
    plain = apply_template(SentenceTransformer(str(tmp_path / "saved")), None)
    assert not np.allclose(plain.encode([pairs[0].sentence1]), a[:1])


def test_mteb_command_runs_offline_on_local_datasets_and_writes_results_mteb_reads_back(tiny_llama, tmp_path, capsys):
    from datasets import Dataset, DatasetDict
    from mteb.cache import ResultCache

    from tests.conftest import run_cli

    for name, shift in (("STS12", 1), ("STSBenchmark", 3)):
        rows = {
            "sentence1": SENTENCES[:8],
            "sentence2": [SENTENCES[(i + shift) % 12] for i in range(8)],
            "score": [float(i % 5) for i in range(8)],
        }
        DatasetDict({"test": Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "local" / name))
    streams = (random.getstate(), np.random.get_state()[1].tolist(), torch.random.get_rng_state())
    code, output = run_cli(
        [
            "mteb",
            str(tiny_llama),
            "--template",
            "eol",
            "--tasks",
            "STS12,STSBenchmark",
            "--local-data",
            str(tmp_path / "local"),
            "--output",
            str(tmp_path / "results"),
        ],
        capsys,
    )
    assert code == 0, output
    # mteb seeds the global generators (for each task); the command puts the caller's states back
    assert random.getstate() == streams[0] and np.random.get_state()[1].tolist() == streams[1]
    assert torch.equal(torch.random.get_rng_state(), streams[2])
    files = sorted(p.name for p in (tmp_path / "results").rglob("*.json"))
    assert "STS12.json" in files and "STSBenchmark.json" in files
    loaded = ResultCache(tmp_path / "results").load_results(
        tasks=["STS12", "STSBenchmark"], require_model_meta=False, include_remote=False
    )
    read_back = {task.task_name for model in loaded.model_results for task in model.task_results}
    assert read_back == {"STS12", "STSBenchmark"}
    # not MTEB's placeholder, no local path, and apart from the model's own results under no template
    assert [model.model_name for model in loaded.model_results] == [f"{tiny_llama.resolve().name}+eol"]
    named = ["mteb", str(tiny_llama), "--tasks", "STS12", "--local-data", str(tmp_path / "local")]
    code, output = run_cli([*named, "--output", str(tmp_path / "named"), "--model-name", "me/tiny"], capsys)
    assert code == 0 and (tmp_path / "named" / "results" / "me__tiny").is_dir(), output
    code, output = run_cli(["mteb", str(tiny_llama), "--tasks", "NoSuchTask", "--output", str(tmp_path / "x")], capsys)
    assert code == 2 and "unknown MTEB task 'NoSuchTask'" in output


def test_mteb_refuses_a_missing_local_data_folder_and_leaves_no_output(tiny_llama, tmp_path, capsys):
    from tests.conftest import run_cli

    missing = ["mteb", str(tiny_llama), "--tasks", "STS12", "--local-data", str(tmp_path / "nowhere")]
    code, output = run_cli([*missing, "--output", str(tmp_path / "results")], capsys)
    assert code == 2 and f"--local-data {tmp_path / 'nowhere'}: no such folder" in output, output
    assert not (tmp_path / "results").exists()


def test_a_failed_mteb_evaluation_removes_the_empty_output_it_made(tmp_path):
    from pcctune.orchestration.mteb import removed_if_left_empty

    with pytest.raises(ConnectionError), removed_if_left_empty(tmp_path / "made"):
        (tmp_path / "made" / "results" / "model").mkdir(parents=True)
        raise ConnectionError("the Hub is unreachable")
    assert not (tmp_path / "made").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(ConnectionError), removed_if_left_empty(tmp_path / "kept"):
        raise ConnectionError("the Hub is unreachable")
    assert (tmp_path / "kept").is_dir()  # the user's folder, there before the command
    with pytest.raises(ConnectionError), removed_if_left_empty(tmp_path / "written"):
        (tmp_path / "written").mkdir()
        (tmp_path / "written" / "STS12.json").write_text("{}")
        raise ConnectionError("the Hub is unreachable")
    assert (tmp_path / "written" / "STS12.json").is_file()  # a result written before the failure stays
