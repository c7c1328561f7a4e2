"""A model pcctune trains loads in plain sentence-transformers.

Each case trains a tiny model, saves it, and loads the saved folder in a subprocess where
``import pcctune`` fails and ``trust_remote_code`` is not passed. Its embeddings must equal
pcctune's to 1e-5 for a short sentence and for one long enough to be truncated, and the template's
tail must be the last tokens of the truncated input.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling

from pcctune.modeling.build import build_model
from pcctune.modeling.saving import is_native_type, module_types, nativize, save_model
from pcctune.modeling.template import PRESETS, TemplateTransformer, ensure_pad_token, sentence_cut
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.checkpoints import CHECKPOINTS
from pcctune.training.config import RunConfig
from tests.conftest import pairs_jsonl, run_cli, tiny_run

SHORT = "a man is playing a guitar"
LONG = " ".join(["a young man is riding a red bike on the street"] * 8)  # far over the 64-token budget
TAIL = '" means in one word:"'


def template_tail(model: SentenceTransformer) -> list[int]:
    """The token ids every input of ``model`` ends with (the template's tail and closing special tokens, such as
    BERT's ``[SEP]``), as tokenized in context: the common end of two sentences' ids."""
    features = model[0].preprocess([SHORT, "two dogs run on the beach"])
    rows = [
        row[mask.bool()].tolist() for row, mask in zip(features["input_ids"], features["attention_mask"], strict=True)
    ]
    common = 0
    while common < min(map(len, rows)) and rows[0][-1 - common] == rows[1][-1 - common]:
        common += 1
    tail = rows[0][len(rows[0]) - common :]
    assert len(tail) >= len(model[0].tokenizer(TAIL, add_special_tokens=False)["input_ids"]) - 1
    return tail


NO_PCCTUNE = """
import importlib.abc, sys
class NotInstalled(importlib.abc.MetaPathFinder):  # as if pcctune were not installed
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "pcctune":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NotInstalled())
"""

PLAIN_ST = (
    NO_PCCTUNE
    + """
import json, sys
try:
    import pcctune
    raise SystemExit("pcctune is importable")
except ImportError:
    pass
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device="cpu")
features = model[0].preprocess([sys.argv[3]])
ids = features["input_ids"][0][features["attention_mask"][0].bool()].tolist()
vectors = model.encode([sys.argv[2], sys.argv[3]], convert_to_numpy=True)
print(json.dumps({"vectors": vectors.tolist(), "long_ids": ids, "max_len": model.max_seq_length}))
"""
)


def load_without_pcctune(folder: Path) -> dict:
    """Embeddings of SHORT and LONG, and LONG's token ids, from plain sentence-transformers in a subprocess."""
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_ST, str(folder), SHORT, LONG], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_same_as_pcctune(folder: Path, ours: SentenceTransformer) -> None:
    """``folder`` loaded without pcctune encodes as ``ours`` (the model as pcctune trains and evaluates it)."""
    plain = load_without_pcctune(folder)
    expected = ours.encode([SHORT, LONG], convert_to_numpy=True)
    np.testing.assert_allclose(np.array(plain["vectors"]), expected, atol=1e-5)
    ids = plain["long_ids"]
    assert len(ids) == plain["max_len"]  # LONG was truncated
    tail = template_tail(ours)
    assert ids[-len(tail) :] == tail  # and kept the template tail
    modules = json.loads((folder / "modules.json").read_text())
    assert all(module["type"].startswith("sentence_transformers.") for module in modules)


def _train(model: Path, senteval: Path, out: Path, **run) -> Path:
    config = RunConfig.model_validate(
        {**tiny_run(model, senteval, pairs_jsonl(out.parent / f"{out.name}.jsonl"), out, max_steps=2), **run}
    )
    run_pipeline(config, tasks=[])
    return out / "stage1-pcc" / "final"


@pytest.mark.parametrize("kind", ["decoder", "encoder"])
def test_a_templated_model_loads_in_plain_sentence_transformers(kind, tiny_llama, tiny_bert, mini_senteval, tmp_path):
    final = _train(tiny_llama if kind == "decoder" else tiny_bert, mini_senteval, tmp_path / kind, template="eol")
    assert json.loads((final / "sentence_bert_config.json").read_text()).get("template") is None
    assert_same_as_pcctune(final, build_model(str(final), template="eol"))
    checkpoints = list((final.parent / CHECKPOINTS).glob("checkpoint-*"))
    assert checkpoints and all(is_native_type(t) for c in checkpoints for t in module_types(c))  # the trainer's too


@pytest.mark.parametrize("fixture", ["tiny_llama", "metaspace_llama", "tiny_bert"])
def test_a_template_model_built_in_python_saves_portable_through_model_save(fixture, request, tmp_path):
    """``build_model`` with a template, saved by ``model.save`` (as a trainer's checkpoints are): plain
    sentence-transformers loads it without pcctune and without trust_remote_code, with the same vectors."""
    model = build_model(str(request.getfixturevalue(fixture)), template="eol")
    model.save(str(tmp_path / "saved"))
    assert_same_as_pcctune(tmp_path / "saved", model)


def test_a_stage_cuts_sentences_of_a_saved_template_model_and_saves_it_plain(
    tiny_llama, mini_senteval, tmp_path, monkeypatch
):
    """``sentence_max_tokens`` cuts the training inputs of a model saved with a template (as a previous stage's
    ``final``) through pcctune's module, for the stage only: its checkpoints and final model load without pcctune."""
    cut = []
    cut_sentence = TemplateTransformer.cut_sentence
    monkeypatch.setattr(TemplateTransformer, "cut_sentence", lambda self, s: cut.append(s) or cut_sentence(self, s))
    build_model(str(tiny_llama), template="eol").save(str(tmp_path / "templated"))
    out = tmp_path / "run"
    pairs = pairs_jsonl(tmp_path / "pairs.jsonl")
    run_pipeline(
        RunConfig.model_validate(tiny_run(tmp_path / "templated", mini_senteval, pairs, out, sentence_max_tokens=3)),
        tasks=[],
    )
    assert cut
    final = out / "stage1-pcc" / "final"
    assert_same_as_pcctune(final, build_model(str(final)))
    checkpoints = list((final.parent / CHECKPOINTS).glob("checkpoint-*"))
    assert checkpoints and all(is_native_type(t) for c in checkpoints for t in module_types(c))


def test_a_4bit_or_sentence_cutting_model_keeps_pcctunes_module_and_says_why(tiny_llama, tmp_path, caplog):
    """What plain sentence-transformers cannot express keeps pcctune's module, in ``model.save`` and in
    ``pcctune train``'s own save alike, and the log says why; once a sentence cut is lifted, the model is
    sentence-transformers' own again."""
    pytest.importorskip("bitsandbytes")
    quantized = build_model(str(tiny_llama), template="eol", quantization={"quant_type": "nf4"})
    cutting = build_model(str(tiny_llama), template="eol")
    sentence_cut(cutting, 5)
    with caplog.at_level(logging.WARNING, logger="pcctune"):
        quantized.save(str(tmp_path / "4bit"))
        cutting.save(str(tmp_path / "cut"))
    pcctune_module = f"{TemplateTransformer.__module__}.{TemplateTransformer.__name__}"
    for folder, why in (("4bit", "in 4-bit"), ("cut", "to 5 tokens (sentence_max_tokens)")):
        assert module_types(tmp_path / folder)[0] == pcctune_module and not nativize(tmp_path / folder)
        assert f"{tmp_path / folder} needs pcctune to load" in caplog.text and why in caplog.text
    sentence_cut(cutting, None)
    assert type(cutting[0]) is Transformer
    cutting.save(str(tmp_path / "whole"))
    assert all(is_native_type(t) for t in module_types(tmp_path / "whole"))


def test_a_merged_lora_model_loads_in_plain_sentence_transformers(tiny_llama, mini_senteval, tmp_path, capsys):
    final = _train(
        tiny_llama, mini_senteval, tmp_path / "lora", template="eol", adapter={"kind": "lora", "r": 2, "alpha": 4}
    )
    merged = tmp_path / "merged"
    code, _ = run_cli(["export", str(final), "--merge", "--output", str(merged)], capsys)
    assert code == 0 and not (merged / "adapter_config.json").exists()
    card = (merged / "README.md").read_text()
    assert card.count("<!-- pcctune -->") == 1 and "### Run config" in card  # the run's section came along
    assert (merged / "pcctune_config.yaml").read_text() == (final / "pcctune_config.yaml").read_text()  # its config
    assert "pcctune is not needed" in card.split("### Loading")[1]  # and its loading part is the merged folder's
    assert_same_as_pcctune(merged, build_model(str(final)))  # the merged model equals the adapter on its base


def test_old_saves_still_load_and_export_converts_them(tiny_llama, tmp_path, capsys):
    """A folder written before native saves (pcctune's module class, template in its config) still loads in
    pcctune; ``pcctune export`` rewrites it as a plain sentence-transformers model with equal embeddings."""
    old = tmp_path / "old"
    module = TemplateTransformer(str(tiny_llama), template="eol", position_ids_from_mask=True)
    ensure_pad_token(module.tokenizer)
    model = SentenceTransformer(modules=[module, Pooling(module.get_embedding_dimension(), "lasttoken")])
    model.save(str(old))
    modules = json.loads((old / "modules.json").read_text())
    assert modules[0]["type"] == "pcctune.modeling.template.TemplateTransformer"
    config = json.loads((old / "sentence_bert_config.json").read_text())
    old_config = {k: v for k, v in config.items() if k not in ("modality_config", "processing_kwargs")}
    (old / "sentence_bert_config.json").write_text(json.dumps({**old_config, "template": PRESETS["eol"]}))
    (old / "chat_template.jinja").unlink(missing_ok=True)
    tokenizer_config = json.loads((old / "tokenizer_config.json").read_text())
    tokenizer_config.pop("chat_template", None)
    (old / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))

    reloaded = build_model(str(old))
    np.testing.assert_allclose(reloaded.encode([SHORT]), model.encode([SHORT]), atol=1e-6)
    code, _ = run_cli(["export", str(old), "--output", str(tmp_path / "native")], capsys)
    assert code == 0
    assert_same_as_pcctune(tmp_path / "native", model)


@pytest.mark.parametrize("trust", [False, True])
def test_a_deep_prompt_model_fails_without_pcctune_and_names_it(trust, tiny_bert, tmp_path):
    """Deep continuous prompts (DCPCSE) are not expressible in plain sentence-transformers: the model keeps
    pcctune's module, and loading it without pcctune fails with a message naming the package."""
    model = build_model(str(tiny_bert), prompt={"prompt_kind": "deep", "prompt_length": 4})
    save_model(model, tmp_path / "prompted")
    code = (
        NO_PCCTUNE
        + f"""
from sentence_transformers import SentenceTransformer
SentenceTransformer(sys.argv[1], trust_remote_code={trust})
"""
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "prompted")], capture_output=True, text=True)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1] if trust else done.stderr
    assert "pcctune" in last


def test_a_lora_model_on_a_bf16_stored_base_loads_in_plain_st_in_the_dtype_it_computed_in(bf16_llama, tmp_path):
    """The folder holds the adapter alone: plain sentence-transformers would load its base as stored (bf16), where
    pcctune computed in fp32; the saved config names the dtype, and the embeddings agree."""
    import torch
    from sentence_transformers import SentenceTransformer

    from pcctune.modeling.adapters import AdapterConfig, attach_adapter

    model = build_model(str(bf16_llama), template="eol")
    attach_adapter(model, AdapterConfig(kind="lora", r=2, alpha=4))
    save_model(model, tmp_path / "lora")
    plain = SentenceTransformer(str(tmp_path / "lora"))
    assert next(plain[0].parameters()).dtype == torch.float32
    ours = build_model(str(tmp_path / "lora"))
    texts = ["A man plays a guitar.", "Two dogs run in the park.", "A woman slices an onion."]
    np.testing.assert_allclose(plain.encode(texts), ours.encode(texts), atol=1e-5)


def test_a_hub_decoder_without_a_pad_token_encodes_a_batch_as_loaded(tiny_llama):
    """A Hub decoder loaded as it is (no template given) keeps its tokenizer: Llama-2 and Mistral ship without a pad
    token, and the first batch of two lengths failed; it gets its end-of-sequence token as one, as an assembled
    model does."""
    import torch
    from transformers import AutoTokenizer

    from pcctune.modeling.build import ModelSource, _load

    assert AutoTokenizer.from_pretrained(str(tiny_llama)).pad_token is None  # as such a model ships
    model = _load(
        ModelSource("someone/decoder", "hub", str(tiny_llama)), None, None, "cpu", {}, None, None, torch.float32
    )
    embeddings = model.encode(["A man plays a guitar.", "Two dogs run in the park near a river."])
    assert embeddings.shape[0] == 2 and np.isfinite(embeddings).all()
