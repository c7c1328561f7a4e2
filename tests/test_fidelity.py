"""Paper fidelity: tokens, dtypes, 4-bit evaluation and stage initialisation as the authors'
scripts do them (ZBWpro/Pcc-tuning ``tune.py`` / ``evaluation.py``, kongds/scaling_sentemb); docs/fidelity.md."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from pcctune.errors import PcctuneError
from pcctune.modeling.build import build_model
from pcctune.modeling.template import PRESETS
from tests.conftest import run_cli

SENTENCE = "a man plays guitar"


def authors_embedding(folder, template: str, sentence: str, dtype: torch.dtype = torch.float32) -> np.ndarray:
    """The authors' embedding: ``tokenizer(filled template)``, a plain forward, the last token's hidden state."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, dtype=dtype).eval()
    inputs = tokenizer(template.replace("{text}", sentence), return_tensors="pt")
    with torch.no_grad():
        vector = model(**inputs).last_hidden_state[0, -1].float().numpy()
    return vector / np.linalg.norm(vector)


def cli_embedding(capsys, tmp_path, *args: str) -> np.ndarray:
    out = tmp_path / "vector.npy"
    code, text = run_cli(["encode", *args, "--output", str(out)], capsys)
    assert code == 0, text
    vector = np.load(out)[0]
    return vector / np.linalg.norm(vector)


def test_metaspace_template_tokens_are_the_authors(metaspace_llama):
    model = build_model(str(metaspace_llama), template="eol")
    tokenizer = AutoTokenizer.from_pretrained(metaspace_llama)
    ours = model.preprocess([SENTENCE])["input_ids"][0].tolist()
    assert ours == tokenizer(PRESETS["eol"].replace("{text}", SENTENCE))["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ours)[:2] == ["<s>", "▁This"]


@pytest.mark.parametrize("fixture", ["metaspace_llama", "tiny_llama"])
def test_encode_equals_the_authors_forward(fixture, request, capsys, tmp_path):
    folder = request.getfixturevalue(fixture)
    ours = cli_embedding(capsys, tmp_path, str(folder), SENTENCE, "--template", "eol", "--pooling", "lasttoken")
    np.testing.assert_allclose(ours, authors_embedding(folder, PRESETS["eol"], SENTENCE), atol=1e-5)


def test_a_template_that_cannot_tokenize_as_the_authors_is_refused(metaspace_llama, monkeypatch):
    from pcctune.modeling import chat_template

    monkeypatch.setattr(chat_template, "head_join", lambda *args: "")  # today's rendering: <s>This
    with pytest.raises(PcctuneError, match=r"does not tokenize as tokenizer\(filled template\).*'T', 'h'"):
        build_model(str(metaspace_llama), template="eol")


def test_fp32_is_enforced_on_a_bf16_checkpoint(bf16_llama, capsys, tmp_path):
    ours = cli_embedding(capsys, tmp_path, str(bf16_llama), SENTENCE, "--template", "eol", "--dtype", "fp32")
    fp32 = authors_embedding(bf16_llama, PRESETS["eol"], SENTENCE, torch.float32)
    bf16 = authors_embedding(bf16_llama, PRESETS["eol"], SENTENCE, torch.bfloat16)
    np.testing.assert_allclose(ours, fp32, atol=1e-5)
    assert np.abs(ours - bf16).max() > 1e-4


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_every_weight_is_in_the_asked_dtype(bf16_llama, dtype):
    model = build_model(str(bf16_llama), template="eol", dtype=dtype)
    wanted = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    assert {p.dtype for p in model.parameters()} == {wanted}


def test_eval_scores_any_model_in_4bit_on_request(tiny_llama, shared_senteval, capsys, tmp_path):
    pytest.importorskip("bitsandbytes")
    import json

    out = {name: tmp_path / f"{name}.json" for name in ("none", "nf4")}
    for name, path in out.items():
        args = ["eval", str(tiny_llama), "--template", "eol", "--data", str(shared_senteval), "--output", str(path)]
        code, text = run_cli([*args, "--quantization", name], capsys)
        assert code == 0, text
    full, nf4 = (json.loads(path.read_text()) for path in out.values())
    assert (full["quantization"], nf4["quantization"]) == ("none", "nf4")
    assert full["sts"] != nf4["sts"]  # the 4-bit backbone scores differently


def _two_lora_stages(model, senteval, out) -> dict:
    stage = {"loss": "pearson", "data": {"source": "stage2"}, "batch_size": 2, "max_steps": 2, "eval_steps": 1}
    return {
        "model": str(model),
        "template": "eol",
        "dtype": "fp32",
        "data_dir": str(senteval),
        "output_dir": str(out),
        "evaluate_before": False,
        "adapter": {"kind": "lora", "r": 2, "alpha": 4},
        "stages": [{"name": "one", **stage}, {"name": "two", **stage}],
    }


def test_fp32_is_kept_through_both_stages_the_evaluations_and_the_merge(bf16_llama, mini_senteval, tmp_path, capsys):
    import pcctune.orchestration.pipeline as pipeline
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import RunConfig

    seen: dict[str, set] = {"trained": set(), "evaluated": set()}
    real_run_stage, real_evaluate = pipeline.run_stage, pipeline.evaluate_sts

    def spy_stage(model, *args, **kwargs):
        seen["trained"] |= {p.dtype for p in model.parameters()}
        return real_run_stage(model, *args, **kwargs)

    def spy_evaluate(model, *args, **kwargs):
        seen["evaluated"] |= {p.dtype for p in model.parameters()}
        return real_evaluate(model, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "run_stage", spy_stage)
        patch.setattr(pipeline, "evaluate_sts", spy_evaluate)
        run_pipeline(RunConfig.model_validate(_two_lora_stages(bf16_llama, mini_senteval, tmp_path / "run")))
    assert seen == {"trained": {torch.float32}, "evaluated": {torch.float32}}
    merged = tmp_path / "merged"
    final = tmp_path / "run" / "stage2-two" / "final"
    code, text = run_cli(["export", str(final), "--merge", "--output", str(merged)], capsys)
    assert code == 0, text
    assert {p.dtype for p in build_model(str(merged), dtype="bf16").parameters()} == {torch.bfloat16}
    from safetensors.torch import load_file

    assert {t.dtype for t in load_file(merged / "model.safetensors").values()} == {torch.float32}


def test_a_run_whose_checkpoints_do_not_fit_the_disk_stops_before_training(
    tiny_llama, mini_senteval, tmp_path, capsys, monkeypatch
):
    import shutil

    import yaml

    from tests.conftest import assert_one_line_error

    config = _two_lora_stages(tiny_llama, mini_senteval, tmp_path / "run")
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=1000))
    code, output = run_cli(["train", str(path)], capsys)
    loaded = "\n".join(line for line in output.splitlines() if "Loading weights" not in line)  # the model loaded first
    assert_one_line_error(code, loaded, "but only 0.0 MB are free")
    assert not list((tmp_path / "run").rglob("checkpoint-*"))


def test_the_paper_config_limits_its_checkpoints():
    from pathlib import Path

    from pcctune.training.config import load_config

    config = load_config(Path(__file__).parents[1] / "configs" / "paper_7b_qlora.yaml")
    assert all(stage.save_total_limit == 2 for stage in config.stages)
    assert config.stages[1].init == "final" and config.eval_precision == "16bit"
