"""Prompt templates: parsing, truncation that keeps the tail, padding sides, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling

from pcctune.errors import PcctuneError
from pcctune.modeling.build import build_model
from pcctune.modeling.template import (
    PRESETS,
    Template,
    TemplateTransformer,
    apply_template,
    ensure_pad_token,
    model_template,
)
from pcctune.testing import SENTENCES, WORDS, save_tiny_llama
from tests.conftest import encode_both_padding_sides

LONG = " ".join(["the man plays guitar in the park with two kids"] * 12)


def test_presets_and_custom():
    assert Template.parse("eol").text == 'This sentence : "{text}" means in one word:"'
    assert Template.parse("STH").text.endswith("means something")
    assert Template.parse("sum").text.endswith("can be summarized as")
    custom = Template.parse("Query: {text} -> vector")
    assert (custom.prefix, custom.suffix) == ("Query: ", " -> vector")
    assert custom.fill("hi") == "Query: hi -> vector"


@pytest.mark.parametrize("bad", ["no slot here", "{text} and {text}"])
def test_template_without_exactly_one_slot_is_an_error(bad):
    with pytest.raises(PcctuneError, match="exactly one {text}"):
        Template.parse(bad)


def _real_tokens(model, sentences):
    features = model.preprocess(sentences)
    tokenizer = model[0].tokenizer
    return [
        tokenizer.convert_ids_to_tokens(row[mask.bool()])
        for row, mask in zip(features["input_ids"], features["attention_mask"], strict=False)
    ]


@pytest.mark.parametrize("fixture", ["tiny_llama", "tiny_bert"])
def test_truncation_cuts_only_the_sentence(fixture, request):
    model = build_model(str(request.getfixturevalue(fixture)), template="eol", max_seq_length=20)
    short, long = _real_tokens(model, ["a man plays guitar", LONG])
    assert len(long) == 20
    # The template's tail (means in one word : ") survives, in full, after the cut sentence.
    tail = short[short.index("means") :]
    assert long[-len(tail) :] == tail
    head = short[: short.index("a")]
    assert long[: len(head)] == head
    assert "guitar" in long  # the sentence's beginning is kept


def test_template_longer_than_budget_is_an_error(tiny_llama):
    with pytest.raises(PcctuneError, match="template alone takes"):
        build_model(str(tiny_llama), template="eol", max_seq_length=5)
    model = build_model(str(tiny_llama), template="eol", quantization={"quant_type": "nf4"}, max_seq_length=20)
    model.max_seq_length = 5  # pcctune's own module checks at each call
    with pytest.raises(PcctuneError, match="template alone takes"):
        model.encode(["a man plays guitar " * 5])


def test_decoder_defaults_to_lasttoken_and_gets_a_pad_token(tiny_llama):
    model = build_model(str(tiny_llama), template="eol")
    assert model[1].pooling_mode == "lasttoken"
    assert model[0].tokenizer.pad_token is not None
    # sentence-transformers' own module, padding on the right: its default position ids count from a row's start
    assert type(model[0]) is Transformer and model[0].tokenizer.padding_side == "right"


def test_encoder_defaults_to_mean(tiny_bert):
    model = build_model(str(tiny_bert))
    assert model[1].pooling_mode == "mean" and type(model[0]) is Transformer


def byte_level_llama(folder, begin: bool):
    """A tiny Llama with a byte-level BPE tokenizer: Llama-3's (a begin-of-text token added) or GPT-2's (none)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [*SENTENCES, " ".join(WORDS), PRESETS["eol"].replace("{text}", "a man plays guitar")]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(
        corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=specials, initial_alphabet=alphabet)
    )
    if begin:
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", tok.token_to_id(specials[0]))]
        )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=specials[0], eos_token=specials[1], model_max_length=64
    )
    return save_tiny_llama(folder, tokenizer)


@pytest.fixture(scope="module", params=["metaspace", "byte-level-begin", "byte-level"])
def decoder_folder(request, tmp_path_factory):
    """Tiny decoders whose tokenizers work as Llama-2's (Metaspace), Llama-3's and GPT-2's (byte-level BPE)."""
    if request.param == "metaspace":
        return request.getfixturevalue("metaspace_llama")
    return byte_level_llama(tmp_path_factory.mktemp(request.param), begin=request.param == "byte-level-begin")


@pytest.mark.parametrize("pooling", ["lasttoken", "mean"])
def test_the_native_template_module_encodes_as_pcctunes_with_either_padding(decoder_folder, pooling):
    """``build_model`` gives a template model sentence-transformers' own module; its vectors are those of pcctune's
    ``TemplateTransformer`` (position ids from the mask), right- or left-padded, a truncated sentence included."""
    model = build_model(str(decoder_folder), template="eol", pooling=pooling)
    assert type(model[0]) is Transformer
    module = TemplateTransformer(str(decoder_folder), template="eol", position_ids_from_mask=True)
    ensure_pad_token(module.tokenizer)
    ours = SentenceTransformer(modules=[module, Pooling(module.get_embedding_dimension(), pooling)])
    sentences = ["a man plays guitar", "two kids are eating food in the park outside", "a dog", LONG]
    native = model.encode(sentences, convert_to_tensor=True)
    right, left = encode_both_padding_sides(ours, sentences)
    single = torch.stack([model.encode([s], convert_to_tensor=True)[0] for s in sentences])
    assert torch.allclose(native, right, atol=1e-5) and torch.allclose(native, left, atol=1e-5)
    assert torch.allclose(single, native, atol=1e-5)


def test_lasttoken_takes_the_templates_last_token(tiny_llama):
    """Last-token pooling equals the backbone's hidden state at the final real position."""
    model = build_model(str(tiny_llama), template="eol", device="cpu")
    model[0].tokenizer.padding_side = "right"
    features = model.preprocess(["a dog", "two kids are eating food"])
    with torch.no_grad():
        hidden = (
            model[0]
            .model(
                input_ids=features["input_ids"],
                attention_mask=features["attention_mask"],
            )
            .last_hidden_state
        )
        pooled = model(features)["sentence_embedding"]
    last = features["attention_mask"].sum(dim=1) - 1
    assert torch.allclose(pooled, hidden[torch.arange(2), last], atol=1e-6)


def test_template_is_saved_and_used_after_loading(tiny_llama, tmp_path):
    model = build_model(str(tiny_llama), template="sum")
    before = model.encode(["a man plays guitar"])
    model.save(str(tmp_path / "saved"))
    loaded = SentenceTransformer(str(tmp_path / "saved"))  # sentence-transformers' own modules: nothing to trust
    assert model_template(loaded) == PRESETS["sum"]
    np.testing.assert_allclose(loaded.encode(["a man plays guitar"]), before, atol=1e-6)
    # pcctune's own loader returns the saved model unchanged too
    assert model_template(build_model(str(tmp_path / "saved"))) == PRESETS["sum"]


def test_template_changes_the_embedding(tiny_llama):
    plain = build_model(str(tiny_llama)).encode(["a man plays guitar"])
    eol = build_model(str(tiny_llama), template="eol").encode(["a man plays guitar"])
    assert not np.allclose(plain, eol)


def test_unknown_model_and_bad_options(tmp_path):
    with pytest.raises(PcctuneError, match="no such folder"):
        build_model("./no/such/folder")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PcctuneError, match="holds no model"):
        build_model(str(tmp_path / "empty"))
    with pytest.raises(PcctuneError, match="unknown dtype"):
        build_model("x", dtype="int3")
    with pytest.raises(PcctuneError, match="missing GGUF"):
        build_model(str(tmp_path / "model.gguf"))


def test_bf16_encoding(tiny_bert):
    model = build_model(str(tiny_bert), dtype="bf16")
    assert next(model.parameters()).dtype == torch.bfloat16
    assert model.encode(["a man"]).shape == (1, 32)


def test_hub_id_offline_is_a_one_line_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(PcctuneError, match="could not load model 'someone/no-such-model'"):
        build_model("someone/no-such-model")


def test_the_chat_template_records_the_template_and_puts_a_prompt_before_it(tiny_llama):
    from pcctune.modeling.chat_template import template_in

    model = build_model(str(tiny_llama), template="eol")
    tokenizer = model[0].tokenizer
    assert template_in(tokenizer) == Template.parse("eol").text  # read back from the saved chat template
    features = model[0].preprocess(["a man"], prompt="young ")
    ids = features["input_ids"][0][features["attention_mask"][0].bool()].tolist()
    assert ids == tokenizer(Template.parse("eol").fill("a man").replace("This", "young This", 1))["input_ids"]
    apply_template(model, None)  # back to plain text
    assert template_in(tokenizer) is None and "message" not in model[0].modality_config
