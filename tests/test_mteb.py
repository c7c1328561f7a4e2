"""A saved pcctune model with a template runs through MTEB's model interface unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer

from pcctune.data.sts import STSPair
from pcctune.evaluation.mteb_bridge import evaluate_with_mteb, local_sts_task
from pcctune.modeling.build import build_model
from tests.conftest import SENTENCES


def test_mteb_encodes_through_the_saved_template(tiny_llama, tmp_path):
    build_model(str(tiny_llama), template="eol").save(str(tmp_path / "saved"))
    model = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True)
    pairs = [STSPair(SENTENCES[i], SENTENCES[i + 6], float(i)) for i in range(6)]
    scores = evaluate_with_mteb(model, local_sts_task("STSBenchmark", pairs))

    a = model.encode([p.sentence1 for p in pairs])
    b = model.encode([p.sentence2 for p in pairs])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    expected = spearmanr(cos, [p.score for p in pairs]).statistic
    assert scores["cosine_spearman"] == pytest.approx(expected, abs=1e-9)

    # Without the template the embeddings differ, so MTEB really used the saved template.
    plain = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True)
    plain[0].template = None
    assert not np.allclose(plain.encode([pairs[0].sentence1]), a[:1])
