"""The SimCSE/SentEval STS protocol against a direct, pair-by-pair computation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from pcctune.data.tasks import load_test_tasks
from pcctune.evaluation.protocols import senteval_text
from pcctune.evaluation.sts import evaluate_sts
from pcctune.modeling.build import build_model
from pcctune.orchestration.evaluate import run_eval
from pcctune.results import SCHEMA_VERSION, EvalResult


def _direct(model, pairs):
    a = model.encode([senteval_text(p.sentence1) for p in pairs])
    b = model.encode([senteval_text(p.sentence2) for p in pairs])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return spearmanr(cos, [p.score for p in pairs]).statistic * 100


def test_protocol_matches_direct_computation(mini_senteval, tiny_bert):
    model = build_model(str(tiny_bert))
    tasks = load_test_tasks(mini_senteval)
    scores, avg = evaluate_sts(model, tasks, show_progress=False)
    for task, score in zip(tasks, scores, strict=False):
        # STS12–16: Spearman over the concatenation of all subsets, not the mean of subsets
        assert score.spearman == pytest.approx(_direct(model, task.pairs), abs=1e-4)
        assert score.n == len(task.pairs)
    sts12 = scores[0]
    subset_values = [_direct(model, s.pairs) for s in tasks[0].subsets]
    assert sts12.mean == pytest.approx(np.mean(subset_values), abs=1e-4)
    sizes = [len(s.pairs) for s in tasks[0].subsets]
    assert sts12.wmean == pytest.approx(np.average(subset_values, weights=sizes), abs=1e-4)
    assert avg == pytest.approx(np.mean([s.spearman for s in scores]))
    assert scores[5].mean is None  # single-split tasks have no subset mean


def test_sentences_are_whitespace_normalised():
    assert senteval_text("  A  man\tplays. ") == "A man plays."


def test_run_writes_a_complete_record(mini_senteval, tiny_bert, tmp_path):
    out = tmp_path / "r.json"
    record = run_eval(str(tiny_bert), mini_senteval, template="Sentence: {text}", output=out, seed=7)
    saved = json.loads(out.read_text())
    assert EvalResult.from_disk(out) == record and saved["kind"] == "eval" and saved["schema_version"] == SCHEMA_VERSION
    assert saved["protocol"] == "simcse-senteval"
    assert saved["template"] == "Sentence: {text}" and saved["seed"] == 7 and saved["dtype"] == "fp32"
    assert set(saved["sts"]) == {"STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness", "avg"}
    assert all(len(h) == 64 for h in saved["data_files_sha256"].values())
    assert "sentence-transformers" in saved["versions"] and saved["wall_time_s"] > 0
    assert saved["torch_threads"] == torch.get_num_threads()

    expected = f"cuda: {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "cpu: "
    assert saved["versions"]["device"].startswith(expected) and len(saved["versions"]["device"]) > len("cpu: ")
