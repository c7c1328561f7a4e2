"""Real models shipped in PyPI packages (slow: run with ``make test-slow``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from pcctune.paths import resolve_senteval_dir

pytestmark = pytest.mark.slow


def _independent_sts(model, senteval: Path) -> dict[str, float]:
    """The SimCSE protocol written again from the files, without pcctune's readers or evaluator."""

    def score(pairs):
        a = model.encode([" ".join(p[0].split()) for p in pairs], batch_size=64)
        b = model.encode([" ".join(p[1].split()) for p in pairs], batch_size=64)
        cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        return spearmanr(cos, [p[2] for p in pairs]).statistic * 100

    results = {}
    sts = senteval / "downstream" / "STS"
    for year in range(12, 17):
        folder = sts / f"STS{year}-en-test"
        pairs = []
        for gs in sorted(folder.glob("STS.gs.*.txt")):
            inputs = folder / gs.name.replace("STS.gs.", "STS.input.")
            if not inputs.exists():
                continue
            for line, gold in zip(inputs.read_text().splitlines(), gs.read_text().splitlines(), strict=False):
                if gold.strip():
                    s1, s2 = line.split("\t")[:2]
                    pairs.append((s1, s2, float(gold)))
        results[f"STS{year}"] = score(pairs)
    rows = [line.split("\t") for line in (sts / "STSBenchmark" / "sts-test.csv").read_text().splitlines()]
    results["STSBenchmark"] = score([(r[5], r[6], float(r[4])) for r in rows])
    lines = (senteval / "downstream" / "SICK" / "SICK_test_annotated.txt").read_text().splitlines()[1:]
    results["SICKRelatedness"] = score([(r[1], r[2], float(r[3])) for r in (line.split("\t") for line in lines)])
    results["avg"] = float(np.mean(list(results.values())))
    return results


def test_minilm_sts_equals_an_independent_implementation():
    from pcctune.modeling.build import build_model
    from pcctune.orchestration.evaluate import run_eval

    senteval = resolve_senteval_dir()
    record = run_eval("all-MiniLM-L6-v2", senteval)
    expected = _independent_sts(build_model("all-MiniLM-L6-v2"), senteval)
    for task, value in expected.items():
        assert record.sts[task] == pytest.approx(value, abs=0.01), task


def test_gguf_decoder_embeds_with_eol_template():
    import torch

    from pcctune.modeling.build import build_model
    from pcctune.modeling.template import PRESETS, model_template

    model = build_model("smollm2-135m", template="eol", max_seq_length=32)
    assert model_template(model) == PRESETS["eol"] and model[1].pooling_mode == "lasttoken"
    sentences = ["A man is playing a guitar.", "A man plays the guitar.", "The stock market fell sharply today."]
    right = model.encode(sentences, convert_to_tensor=True)  # padded on the right, as the model's tokenizer is
    single = torch.stack([model.encode([s], convert_to_tensor=True)[0] for s in sentences])
    assert torch.allclose(single, right, atol=1e-3)
    cos = torch.nn.functional.cosine_similarity
    assert cos(right[0], right[1], dim=0) > cos(right[0], right[2], dim=0)
    tokenizer = model[0].tokenizer
    features = model.preprocess(["word " * 200])
    ids = features["input_ids"][0][features["attention_mask"][0].bool()]
    assert len(ids) == 32
    assert tokenizer.decode(ids).endswith('" means in one word:"')


@pytest.mark.parametrize("template", ["eol", "sth", "sum", "demonstration"])
def test_cli_encodes_the_gguf_decoder_with_each_template(template, tmp_path):
    from typer.testing import CliRunner

    from pcctune.cli import app
    from pcctune.modeling.demonstrations import Demonstration, demonstration_template

    if template == "demonstration":
        template = demonstration_template("eol", Demonstration("A jockey riding a horse.", "Equestrian"))
    sentences = ["A man is playing a guitar.", "A man plays the guitar.", "The stock market fell sharply today."]
    output = tmp_path / "vectors.npy"
    result = CliRunner().invoke(
        app, ["encode", "smollm2-135m", *sentences, "--template", template, "--output", str(output)]
    )
    assert result.exit_code == 0, result.output
    vectors = np.load(output)
    assert vectors.shape == (3, 576) and np.isfinite(vectors).all()
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert normed[0] @ normed[1] > normed[0] @ normed[2]


@pytest.mark.parametrize("name", ["smollm2-135m", "gemma-3-270m", "all-MiniLM-L6-v2"])
def test_the_chat_template_route_tokenizes_like_the_filled_template(name):
    """The template rendered as a chat template gives exactly the ids of ``tokenizer(template.fill(s))``
    (what pcctune tokenized before native saves), for each real tokenizer, BOS / [CLS] / [SEP] included."""
    from pcctune.modeling.build import build_model
    from pcctune.modeling.template import PRESETS, Template

    model = build_model(name, template="eol")
    tokenizer = model[0].tokenizer
    sentences = ["A man is playing a guitar.", 'He said "no".', "  spaced  out  ", "Ünïcödé café?", "x"]
    features = model[0].preprocess(sentences)
    for row, sentence in enumerate(sentences):
        ids = features["input_ids"][row][features["attention_mask"][row].bool()].tolist()
        assert ids == tokenizer(Template(PRESETS["eol"]).fill(sentence))["input_ids"], sentence


def test_mpnet_from_its_split_packages_and_its_ready_config(tmp_path, mini_senteval):
    """all-mpnet-base-v2 loads by short name from the five zip-part packages, and
    configs/mpnet_stage2.yaml trains, saves and evaluates end to end (on the miniature data and for
    two steps here; the full run is about 50 min on one CPU thread)."""
    from sentence_transformers import SentenceTransformer
    from typer.testing import CliRunner

    from pcctune.cli import app
    from pcctune.modeling.build import build_model

    model = build_model("all-mpnet-base-v2")
    assert model[0].auto_model.config.model_type == "mpnet"
    vectors = model.encode(["A man is playing a guitar.", "A man plays the guitar.", "The stock market fell."])
    assert vectors.shape == (3, 768)
    assert vectors[0] @ vectors[1] > 0.8 > 0.2 > vectors[0] @ vectors[2]  # normalized: cosines

    root = Path(__file__).resolve().parents[1]
    overrides = {
        "output_dir": str(tmp_path / "run"),
        "data_dir": str(mini_senteval),
        "evaluate_before": "false",
        "stages.0.max_steps": "2",
        "stages.0.batch_size": "2",
        "stages.0.eval_steps": "1",
    }
    sets = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    result = CliRunner().invoke(app, ["train", str(root / "configs" / "mpnet_stage2.yaml"), *sets])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["sts_by_stage"]
    trained = SentenceTransformer(str(tmp_path / "run" / "stage1-pcc" / "final"))
    assert trained.encode(["A man is playing a guitar."]).shape == (1, 768)
