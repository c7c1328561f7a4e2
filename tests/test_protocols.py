"""The papers' evaluation protocol (sentence edits, tokenized text form) and the sentence-only cut-off."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import get_protocol, load_protocol_tasks, paper_sentence
from pcctune.evaluation.sts import evaluate_sts
from pcctune.modeling.build import build_model
from pcctune.modeling.template import Template, sentence_cut
from pcctune.testing import make_mini_senteval, write_lines, write_tokenized_copy
from tests.conftest import pairs_jsonl


@pytest.mark.parametrize(
    ("sentence", "edited"),
    [
        ('He said "stop" to me', "He said 'stop' to me."),  # quotes cannot close the template's quote
        ('He said "stop"', "He said 'stop'"),  # ends in a quote: no period added, the quote still becomes '
        ("A man is playing a guitar", "A man is playing a guitar."),  # missing final punctuation
        ("Is the man playing a guitar?", "Is the man playing a guitar."),  # a final ? becomes .
        ("Is it 'true'", "Is it 'true'"),  # ends in ': kept as it is
        ("Done.", "Done."),
        ("", ""),
    ],
)
def test_paper_sentence_edits(sentence, edited):
    assert paper_sentence(sentence) == edited


def test_paper_protocol_edits_only_templated_sentences():
    paper, simcse = get_protocol("paper"), get_protocol("simcse-senteval")
    assert paper.prepare('  Is  he "ok"? ', templated=True) == "Is he 'ok'."
    assert paper.prepare('  Is  he "ok"? ', templated=False) == 'Is he "ok"?'
    assert simcse.prepare('  Is  he "ok"? ', templated=True) == 'Is he "ok"?'
    with pytest.raises(PcctuneError, match="unknown protocol 'mteb'; choose from simcse-senteval, paper"):
        get_protocol("mteb")


def test_paper_protocol_reads_the_tokenized_text_and_sick_from_the_raw_folder(tmp_path):
    root = make_mini_senteval(tmp_path / "senteval")
    with pytest.raises(PcctuneError, match="no senteval-tokenized/ beside"):
        load_protocol_tasks(root, "paper")
    write_tokenized_copy(root)
    tasks = {t.name: t for t in load_protocol_tasks(root, "paper")}
    assert tasks["STS12"].pairs[0].sentence1 == tasks["STS12"].pairs[0].sentence1.lower()
    assert tasks["SICKRelatedness"].pairs[0].sentence1[0].isupper()  # SICK stays raw, as the SimCSE fork read it
    raw = {t.name: t for t in load_protocol_tasks(root, "simcse-senteval")}
    assert raw["STS12"].pairs[0].sentence1[0].isupper()


def test_paper_protocol_scores_the_edited_sentences(tiny_llama, tmp_path):
    root = make_mini_senteval(tmp_path / "senteval")
    write_lines(
        root / "downstream" / "STS" / "STS12-en-test" / "STS.input.alpha.txt",
        [
            'A man "plays" guitar?\tA woman plays piano',
            "A dog runs\tA cat is eating?",
            'Two kids "are" eating\tA boy is riding',
            "People are sitting\tA girl is sitting?",
        ],
    )
    model = build_model(str(tiny_llama), template="eol")
    tasks = load_protocol_tasks(root, "simcse-senteval")[:1]
    (score,), _ = evaluate_sts(model, tasks, protocol="paper", show_progress=False)
    pairs = tasks[0].pairs
    a = model.encode([paper_sentence(p.sentence1) for p in pairs])
    b = model.encode([paper_sentence(p.sentence2) for p in pairs])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert score.spearman == pytest.approx(spearmanr(cos, [p.score for p in pairs]).statistic * 100)
    (plain,), _ = evaluate_sts(model, tasks, protocol="simcse-senteval", show_progress=False)
    assert plain.spearman != pytest.approx(score.spearman)  # the edits change what the model sees


def test_sentence_only_cut_off_keeps_the_template_tail(tiny_llama):
    model = build_model(str(tiny_llama), template="eol")
    module = model[0]
    template = Template.parse("eol")
    long = " ".join(["the man is playing a red guitar in the park"] * 4)
    sentence_cut(model, 5)  # a plain module is wrapped in pcctune's while the cut is in force
    ids = model.preprocess([long])["input_ids"][0].tolist()
    tokenizer = module.tokenizer
    head = tokenizer(template.prefix, add_special_tokens=True)["input_ids"]
    tail = tokenizer(template.suffix, add_special_tokens=False)["input_ids"]
    first_five = tokenizer(long, add_special_tokens=False)["input_ids"][:5]
    assert ids == head + first_five + tail  # the sentence alone is cut; the template's head and tail survive
    sentence_cut(model, None)
    assert model[0] is module and len(model.preprocess([long])["input_ids"][0]) > len(ids)


def _one_step_cut_config(tmp_path, model: str, senteval, template: str | None = None, **stage_extra):
    """A one-stage, one-step Pearson run on 16 pairs whose training inputs cut sentences to 3 tokens."""
    from pcctune.training.config import RunConfig

    pairs_jsonl(tmp_path / "p.jsonl", 16)
    top = {"template": template} if template else {}
    stage = {
        "name": "s",
        "loss": "pearson",
        "data": {"source": "pairs", "path": str(tmp_path / "p.jsonl")},
        "batch_size": 4,
        "max_steps": 1,
        "dev": "none",
        "sentence_max_tokens": 3,
        **stage_extra,
    }
    return RunConfig.model_validate(
        {
            "model": model,
            **top,
            "data_dir": str(senteval),
            "output_dir": str(tmp_path / "run"),
            "evaluate_before": False,
            "stages": [stage],
        }
    )


def test_stage_sentence_max_tokens_cuts_training_inputs_only(tiny_llama, shared_senteval, tmp_path, monkeypatch):
    import json

    from sentence_transformers.base.modules import Transformer

    from pcctune.modeling.template import TemplateTransformer
    from pcctune.orchestration.pipeline import run_pipeline

    limits: list[int | None] = []  # the input module's cut at each preprocess call, in order
    cuts: list[tuple[int, int]] = []  # (sentence tokens, tokens kept) of each sentence cut
    preprocess, cut_sentence = Transformer.preprocess, TemplateTransformer.cut_sentence

    def recording_preprocess(self, inputs, *args, **kwargs):
        limits.append(getattr(self, "sentence_max_tokens", None))
        return preprocess(self, inputs, *args, **kwargs)

    def recording_cut(self, sentence):
        kept = cut_sentence(self, sentence)
        cuts.append((len(self._ids(sentence)), len(self._ids(kept))))
        return kept

    monkeypatch.setattr(Transformer, "preprocess", recording_preprocess)
    monkeypatch.setattr(TemplateTransformer, "cut_sentence", recording_cut)
    config = _one_step_cut_config(
        tmp_path, str(tiny_llama), shared_senteval, template="eol", gradient_checkpointing=True
    )
    run_pipeline(config)
    assert 3 in limits and limits[-1] is None  # training cut to 3 tokens; the test sets read after, whole
    assert cuts and all(kept <= 3 for _, kept in cuts) and any(whole > 3 for whole, _ in cuts)
    saved = json.loads((tmp_path / "run" / "stage1-s" / "final" / "sentence_bert_config.json").read_text())
    assert saved.get("sentence_max_tokens") is None  # the saved model and its evaluations keep whole sentences


def test_sentence_max_tokens_needs_a_template(tiny_bert, tiny_llama, shared_senteval, tmp_path):
    """Refused before a model loads where neither the run nor the model's folder has a template; a folder saved with
    one is enough; a stage given a plain model by a library caller refuses too."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.orchestration.run_checks import validate_run
    from pcctune.training.stage import training_lengths

    with pytest.raises(PcctuneError, match="sentence_max_tokens cuts the sentence before it fills the template"):
        run_pipeline(_one_step_cut_config(tmp_path, str(tiny_bert), shared_senteval))
    assert not (tmp_path / "run").exists()
    build_model(str(tiny_llama), template="eol").save(str(tmp_path / "templated"))
    validate_run(_one_step_cut_config(tmp_path, str(tmp_path / "templated"), shared_senteval), shared_senteval)
    stage = _one_step_cut_config(tmp_path, str(tiny_bert), shared_senteval, template="eol").stages[0]
    transformer = Transformer(str(tiny_bert))  # a plain sentence-transformers model, without pcctune's module
    plain = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension())])
    with pytest.raises(PcctuneError, match="sentence_max_tokens needs pcctune's input module"):
        with training_lengths(plain, stage):
            pass


def test_eval_command_records_the_protocol_it_ran(tiny_bert, tmp_path, capsys):
    import json

    from tests.conftest import run_cli

    root = make_mini_senteval(tmp_path / "senteval")
    write_tokenized_copy(root)
    code, output = run_cli(
        ["eval", str(tiny_bert), "--data", str(root), "--protocol", "paper", "--output", str(tmp_path / "r.json")],
        capsys,
    )
    assert code == 0, output
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["protocol"] == "paper" and "paper protocol" in output
    assert any("senteval-tokenized" in path for path in saved["data_files_sha256"])


def test_a_template_model_saved_as_plain_st_scores_as_in_memory_under_the_paper_protocol(tiny_llama, tmp_path):
    from sentence_transformers import SentenceTransformer

    from pcctune.modeling.saving import save_model

    root = make_mini_senteval(tmp_path / "senteval")
    write_lines(
        root / "downstream" / "STS" / "STS12-en-test" / "STS.input.alpha.txt",
        ['A man "plays" guitar?\tA woman plays piano', "A dog runs\tA cat is eating?"] * 2,
    )
    tasks = load_protocol_tasks(root, "simcse-senteval")[:1]
    model = build_model(str(tiny_llama), template="eol")
    assert save_model(model, tmp_path / "native")  # plain sentence-transformers: no pcctune module
    plain = SentenceTransformer(str(tmp_path / "native"))
    assert not hasattr(plain[0], "sentence_max_tokens")
    (in_memory,), _ = evaluate_sts(model, tasks, protocol="paper", show_progress=False)
    (saved,), _ = evaluate_sts(plain, tasks, protocol="paper", show_progress=False)
    (unedited,), _ = evaluate_sts(plain, tasks, protocol="simcse-senteval", show_progress=False)
    assert saved.spearman == pytest.approx(in_memory.spearman)
    assert saved.spearman != pytest.approx(unedited.spearman)


def test_a_template_only_protocol_refuses_a_model_without_a_template(tiny_bert, tmp_path, capsys):
    from tests.conftest import assert_one_line_error, run_cli

    root = make_mini_senteval(tmp_path / "senteval")
    write_tokenized_copy(root)
    code, output = run_cli(["eval", str(tiny_bert), "--data", str(root), "--protocol", "paper-prompt"], capsys)
    assert_one_line_error(code, output, "has no template")


def test_a_run_config_defaults_to_the_protocol_pcctune_eval_defaults_to():
    """Training cannot import the evaluation layer, so the config names the default protocol itself: the same one."""
    from pcctune.evaluation.protocols import DEFAULT_PROTOCOL, PROTOCOLS
    from pcctune.training.config import RunConfig

    assert RunConfig.model_fields["eval_protocol"].default == DEFAULT_PROTOCOL in PROTOCOLS
