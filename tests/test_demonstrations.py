"""In-context demonstrations: template assembly, candidates without test data, the dev-only search."""

from __future__ import annotations

import pytest

from pcctune.data.dev import dev_parts
from pcctune.data.leakage import normalize_sentence
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError
from pcctune.evaluation.demonstrations import candidate_sentences, search_demonstrations
from pcctune.modeling.build import build_model
from pcctune.modeling.demonstrations import Demonstration, demonstration_template, predict_words
from pcctune.modeling.template import Template, model_template
from tests.conftest import SENTENCES


def test_demonstration_template_assembly():
    text = demonstration_template("eol", Demonstration("A jockey riding a horse.", "Equestrian"))
    assert text == (
        'This sentence : "A jockey riding a horse." means in one word:"Equestrian".'
        'This sentence : "{text}" means in one word:"'
    )
    assert Template(text).suffix == '" means in one word:"'
    sum_text = demonstration_template("sum", Demonstration("A dog runs.", "running"))
    assert sum_text.startswith('This sentence : "A dog runs." can be summarized as running.')
    with pytest.raises(PcctuneError, match="may not contain"):
        demonstration_template("eol", Demonstration("a {text} b", "x"))


def test_truncation_keeps_the_demonstration_and_the_tail(tiny_llama):
    template = demonstration_template("eol", Demonstration("a dog runs", "dog"))
    model = build_model(str(tiny_llama), template=template, max_seq_length=30)
    tokenizer = model[0].tokenizer

    def tokens(sentence):
        features = model.preprocess([sentence])
        return tokenizer.convert_ids_to_tokens(features["input_ids"][0][features["attention_mask"][0].bool()])

    short = tokens("a man")
    last_means = len(short) - 1 - short[::-1].index("means")
    tail = short[last_means - 1 :]  # the closing quote of the sentence, then the template's tail
    head = short[: last_means - 1 - 2]  # everything before the two sentence tokens "a man"
    long = tokens("the man plays guitar in the park " * 10)
    assert len(long) == 30
    assert long[-len(tail) :] == tail and long[: len(head)] == head
    assert "dog" in head and "runs" in head  # the demonstration survives with the template


def test_candidates_never_come_from_a_test_set(mini_senteval):
    test_sentences = {
        normalize_sentence(s)
        for t in load_test_tasks(mini_senteval)
        for p in t.pairs
        for s in (p.sentence1, p.sentence2)
    }
    candidates = candidate_sentences(mini_senteval, 10)
    assert candidates and not {normalize_sentence(s) for s in candidates} & test_sentences  # not even normalized


def test_search_scores_every_candidate_on_dev_pairs_only(tiny_llama, mini_senteval):
    model = build_model(str(tiny_llama), template="eol")
    encoded: list[str] = []
    original_encode = model.encode

    def spy(sentences, *args, **kwargs):
        encoded.extend(sentences)
        return original_encode(sentences, *args, **kwargs)

    model.encode = spy
    dev = dev_parts("sick-trial+stsb-dev", mini_senteval)
    words = predict_words(model, SENTENCES[:3], model_template(model))
    demos = [Demonstration(s, w or "thing") for s, w in zip(SENTENCES[:3], words, strict=False)]
    results = search_demonstrations(model, demos, dev, "eol")
    assert len(results) == 4  # the plain template and every candidate, each with its dev score
    assert [r.dev_spearman for r in results] == sorted((r.dev_spearman for r in results), reverse=True)
    assert {r.demonstration for r in results} == {Demonstration("", ""), *demos}
    dev_pairs = [p for pairs in dev.values() for p in pairs]
    dev_sentences = {s for p in dev_pairs for s in (p.sentence1, p.sentence2)}
    assert set(encoded) <= dev_sentences  # nothing but dev pairs was ever scored
    test_pairs = {(p.sentence1, p.sentence2) for t in load_test_tasks(mini_senteval) for p in t.pairs}
    assert not {(p.sentence1, p.sentence2) for p in dev_pairs} & test_pairs
    assert model_template(model) == Template.parse("eol").text  # the search leaves the model as it was


def test_icl_command_saves_the_best_demonstration_with_every_dev_score(tiny_llama, mini_senteval, tmp_path):
    import json

    from typer.testing import CliRunner

    from pcctune.cli import app

    output = tmp_path / "icl"
    result = CliRunner().invoke(
        app, ["icl", str(tiny_llama), "--candidates", "3", "--data", str(mini_senteval), "--output", str(output)]
    )
    assert result.exit_code == 0, result.output
    search = json.loads((output / "demonstration_search.json").read_text())
    scores = [c["dev_spearman"] for c in search["candidates"]]
    assert scores == sorted(scores, reverse=True)
    assert ("", "") in [(c["sentence"], c["word"]) for c in search["candidates"]]  # no demonstration is scored too
    assert model_template(build_model(str(output))) == search["chosen_template"]  # saved as plain ST


def test_a_demonstration_is_scored_like_a_checkpoint_each_dev_set_on_its_own(tiny_llama, mini_senteval):
    """On the combined dev set the search uses the checkpoint selector's score (size-weighted, never pooled)."""
    from pcctune.evaluation.demonstrations import dev_spearman
    from pcctune.training.dev import DevSTSEvaluator

    model = build_model(str(tiny_llama), template="eol")
    parts = dev_parts("sick-trial+stsb-dev", mini_senteval)
    assert len(parts["sick-trial"]) != len(parts["stsb-dev-filtered"])  # so weighting differs from a plain mean
    selector = DevSTSEvaluator(parts, "both")(model)["both_spearman_cosine"]
    assert dev_spearman(model, parts) == pytest.approx(selector * 100, abs=1e-6)


def test_an_interrupted_search_scores_only_the_missing_candidates(
    tiny_llama, mini_senteval, tmp_path, monkeypatch, capfd
):
    import json

    from rich.console import Console

    import pcctune.evaluation.demonstrations as demonstrations
    from pcctune.orchestration.icl import run_icl

    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))  # the kept scores live in pcctune's cache

    # three candidates (the mini data's pool is smaller), each with a word (the tiny random model predicts none)
    monkeypatch.setattr(demonstrations, "candidate_sentences", lambda folder, count, seed: SENTENCES[:count])
    monkeypatch.setattr(demonstrations, "predict_words", lambda model, sentences, base: ["thing"] * len(sentences))

    real = demonstrations.dev_spearman

    def search(output, fail_at=None):
        calls = []

        def counted(model, parts):
            calls.append(model_template(model))
            if len(calls) == fail_at:
                raise KeyboardInterrupt
            return real(model, parts)

        monkeypatch.setattr(demonstrations, "dev_spearman", counted)
        run_icl(str(tiny_llama), "eol", 3, "sick-trial", "fp32", 0, mini_senteval, output, Console(quiet=True))
        return calls

    uninterrupted = search(tmp_path / "whole")
    assert len(uninterrupted) == 4  # no demonstration and three candidates
    assert "Demonstrations: 100%" in capfd.readouterr().err  # one progress bar over the candidates

    output = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        search(output, fail_at=3)
    [kept] = (tmp_path / "cache").glob("resume/icl-*/scores.json")
    assert len(json.loads(kept.read_text())["scores"]) == 2 and not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "senteval", "whole"]  # nothing beside the output
    assert search(output) == uninterrupted[2:]  # the two scored before the interrupt are not scored again
    assert not kept.exists()  # gone once the model is saved
    scores = [json.loads((o / "demonstration_search.json").read_text()) for o in (tmp_path / "whole", output)]
    assert scores[0] == scores[1]

    with pytest.raises(KeyboardInterrupt):  # kept scores made under another key are set aside, not used
        search(tmp_path / "other", fail_at=2)
    [kept] = (tmp_path / "cache").glob("resume/icl-*/scores.json")
    kept.write_text(json.dumps({"key": "another search", "scores": dict.fromkeys(uninterrupted, 99.0)}))
    assert len(search(tmp_path / "other")) == 4
    kept.parent.mkdir()  # a file cut short where the kept scores live: set aside too
    kept.write_text('{"key": "cut short')
    assert len(search(tmp_path / "third")) == 4
