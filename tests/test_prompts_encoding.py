"""pcctune encodes what ``model.encode`` encodes: a model's sentence-transformers prompt (``prompts`` with a
``default_prompt_name``, or one given by name or text) in every encoding path; and a model ``build_model`` makes
from a plain Hugging Face folder saves, through ``model.save`` and a trainer's checkpoints, as a folder plain
sentence-transformers loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from sentence_transformers import SentenceTransformer

import pcctune
import pcctune.evaluation.sts as sts_module
from pcctune.data.sts import STSPair
from pcctune.errors import PcctuneError
from pcctune.modeling.build import build_model, resolve_source
from pcctune.modeling.encoding import encode_texts, encode_unique
from pcctune.modeling.prompts import check_prompt_choice, check_prompt_name
from pcctune.orchestration.encode import run_encode
from pcctune.orchestration.evaluate import run_eval
from pcctune.results import RunResult
from pcctune.testing import SENTENCES
from pcctune.training.batching import plan_batches
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.dev import DevSTSEvaluator
from pcctune.training.stage import training_arguments
from tests.conftest import assert_one_line_error, hub_cache, one_step_stage2, run_cli, write_csv
from tests.test_native_save import NO_PCCTUNE

PROMPTS = {"query": "query: ", "other": "a different instruction: "}


def sentence_pairs(count: int) -> list[tuple[str, str]]:
    """``count`` distinct pairs of the test sentences (each with the one ``step`` after it)."""
    n = len(SENTENCES)
    return [(SENTENCES[i % n], SENTENCES[(i + 1 + i // n) % n]) for i in range(count)]


TEXTS = ["a man is playing a guitar", "two dogs run in the park", "a woman slices an onion", "a man"]


def with_prompts(folder: Path, out: Path, template: str | None = None) -> Path:
    """``folder`` saved as a sentence-transformers model whose default prompt is ``query: ``."""
    model = build_model(str(folder), template=template)
    model.prompts, model.default_prompt_name = dict(PROMPTS), "query"
    model.save(str(out))
    return out


@pytest.fixture(scope="module")
def prompted_bert(tiny_bert, tmp_path_factory) -> Path:
    return with_prompts(tiny_bert, tmp_path_factory.mktemp("prompted-bert"))


@pytest.fixture(scope="module")
def prompted_llama(tiny_llama, tmp_path_factory) -> Path:
    """A decoder with pcctune's template (a chat template): sentence-transformers applies a prompt as a system
    message there."""
    return with_prompts(tiny_llama, tmp_path_factory.mktemp("prompted-llama"), template="eol")


def loaded(folder: Path) -> SentenceTransformer:
    return build_model(str(folder))


@pytest.mark.parametrize("fixture", ["prompted_bert", "prompted_llama"])
def test_encode_texts_applies_the_default_prompt_as_encode_does(fixture, request):
    model = loaded(request.getfixturevalue(fixture))
    expected = model.encode(TEXTS, convert_to_numpy=True)
    bare = model.encode(TEXTS, prompt="", convert_to_numpy=True)
    assert np.abs(expected - bare).max() > 1e-3  # the prompt changes the vectors: the comparison below means something
    np.testing.assert_allclose(encode_texts(model, TEXTS), expected, atol=1e-5)
    unique = encode_unique(model, TEXTS, show_progress=False)
    np.testing.assert_allclose(np.stack([unique[t] for t in TEXTS]), expected, atol=1e-5)


def test_a_decoder_template_reads_the_prompt_through_its_cached_prefix(prompted_llama):
    model = loaded(prompted_llama)
    expected = model.encode(TEXTS, convert_to_numpy=True)
    np.testing.assert_allclose(encode_texts(model, TEXTS, reuse_prefix=True), expected, atol=1e-5)
    np.testing.assert_allclose(encode_texts(model, TEXTS, reuse_prefix=False), expected, atol=1e-5)


def test_a_truncate_dim_cuts_the_vectors_as_encode_does_and_keys_the_cache(prompted_bert, prompted_llama):
    """A Matryoshka model saved with ``truncate_dim`` is scored on the vectors ``model.encode`` gives: cut."""
    from pcctune.modeling.fingerprint import describe_modules

    for folder in (prompted_bert, prompted_llama):
        model = loaded(folder)
        full, described = encode_texts(model, TEXTS), describe_modules(model)
        model.truncate_dim = 4
        cut = encode_texts(model, TEXTS, reuse_prefix=True)
        assert cut.shape == (len(TEXTS), 4) and full.shape[1] > 4
        np.testing.assert_allclose(cut, model.encode(TEXTS, convert_to_numpy=True), atol=1e-5)
        assert describe_modules(model) != described


@pytest.mark.parametrize("asked", [{"prompt_name": "other"}, {"prompt": ""}, {"prompt": "note: "}])
def test_a_prompt_given_by_name_or_text_is_applied_as_encode_applies_it(prompted_bert, asked):
    model = loaded(prompted_bert)
    np.testing.assert_allclose(
        encode_texts(model, TEXTS, **asked), model.encode(TEXTS, convert_to_numpy=True, **asked), atol=1e-5
    )


def test_a_model_without_a_prompt_encodes_as_before(tiny_bert):
    model = build_model(str(tiny_bert))
    assert model.default_prompt_name is None
    np.testing.assert_allclose(encode_texts(model, TEXTS), model.encode(TEXTS, convert_to_numpy=True), atol=1e-5)


def test_the_dev_evaluator_scores_the_vectors_encode_gives(prompted_bert):
    model = loaded(prompted_bert)
    pairs = [STSPair(a, b, float(i % 5)) for i, (a, b) in enumerate(sentence_pairs(12))]
    evaluator = DevSTSEvaluator({"dev": pairs}, "dev")
    ours = evaluator(model)
    texts = sorted({s for p in pairs for s in (p.sentence1, p.sentence2)})
    vectors = model.encode(texts, convert_to_numpy=True)
    by_text = dict(zip(texts, vectors, strict=True))
    cosines = [
        float(by_text[p.sentence1] @ by_text[p.sentence2])
        / float(np.linalg.norm(by_text[p.sentence1]) * np.linalg.norm(by_text[p.sentence2]))
        for p in pairs
    ]
    from scipy.stats import spearmanr

    expected = spearmanr(cosines, [p.score for p in pairs]).statistic
    assert ours["dev_spearman_cosine"] == pytest.approx(expected, abs=1e-6)


def encode_by_st(model, sentences, **options):
    """``encode_unique`` done by ``model.encode`` itself: what the scoring after it would see from plain ST."""
    unique = sorted(set(sentences))
    return dict(zip(unique, model.encode(unique, convert_to_numpy=True), strict=True))


def test_pcctune_eval_equals_encode_followed_by_the_same_scoring(prompted_bert, tmp_path, monkeypatch):
    rows = [(a, b, i % 5) for i, (a, b) in enumerate(sentence_pairs(16))]
    pairs = write_csv(tmp_path / "mine.csv", rows)
    ours = run_eval(str(prompted_bert), None, pairs=[pairs], console=Console(quiet=True))
    assert ours.prompt == "query: "
    monkeypatch.setattr(sts_module, "encode_unique", encode_by_st)
    theirs = run_eval(str(prompted_bert), None, pairs=[pairs], console=Console(quiet=True))
    assert ours.sts == pytest.approx(theirs.sts, abs=1e-3)
    assert ours.sts_detail[0].pearson == pytest.approx(theirs.sts_detail[0].pearson, abs=1e-5)
    bare = run_eval(str(prompted_bert), None, pairs=[pairs], prompt="", console=Console(quiet=True))
    assert bare.prompt is None
    assert bare.sts_detail[0].pearson != pytest.approx(ours.sts_detail[0].pearson, abs=1e-5)


def test_the_python_api_evaluates_and_records_as_pcctune_eval_does(prompted_bert, tmp_path):
    rows = [(a, b, i % 5) for i, (a, b) in enumerate(sentence_pairs(16))]
    pairs = write_csv(tmp_path / "mine.csv", rows)
    cli = run_eval(str(prompted_bert), None, pairs=[pairs], console=Console(quiet=True))
    api = pcctune.evaluate(loaded(prompted_bert), pairs=pairs)
    assert api.prompt == cli.prompt == "query: "
    assert api.sts == pytest.approx(cli.sts, abs=1e-6)
    assert (api.template, api.pooling, api.data_files_sha256) == (cli.template, cli.pooling, cli.data_files_sha256)


def test_a_bootstrap_comparison_records_and_prints_the_prompt_each_model_read(
    tiny_bert, prompted_bert, mini_senteval, tmp_path, capsys
):
    from pcctune.results import CompareResult, ScoredModel

    result = pcctune.compare_models(tiny_bert, prompted_bert, data=mini_senteval, resamples=100)
    assert result.model_a == ScoredModel(prompt=None, dtype="fp32", quantization="none")
    assert result.model_b == ScoredModel(prompt="query: ", dtype="fp32", quantization="none")
    out = tmp_path / "compare.json"
    args = ["compare", str(tiny_bert), str(prompted_bert), "--bootstrap", "--data", str(mini_senteval)]
    code, printed = run_cli([*args, "--resamples", "100", "--output", str(out)], capsys)
    assert code == 0, printed
    assert CompareResult.from_disk(out).model_b == result.model_b
    assert "A's model scored with no prompt, in fp32" in printed
    assert 'B\'s model scored with the prompt "query: ", in fp32' in printed


def test_pcctune_encode_applies_the_prompt(prompted_bert):
    model = loaded(prompted_bert)
    quiet = Console(quiet=True)
    ours = run_encode(str(prompted_bert), TEXTS, None, None, "fp32", None, quiet)
    np.testing.assert_allclose(ours, model.encode(TEXTS, convert_to_numpy=True), atol=1e-5)
    named = run_encode(str(prompted_bert), TEXTS, None, None, "fp32", None, quiet, prompt_name="other")
    np.testing.assert_allclose(named, model.encode(TEXTS, prompt_name="other", convert_to_numpy=True), atol=1e-5)


def refuse_loading(*_: object, **__: object) -> None:
    raise AssertionError("the model loaded before its prompt name was checked")


def test_an_unknown_prompt_name_is_one_line_before_the_model_loads(
    prompted_bert, shared_senteval, tmp_path, capsys, monkeypatch
):
    import pcctune.orchestration.encode as encode_module
    import pcctune.orchestration.evaluate as evaluate_module
    import pcctune.orchestration.pipeline as pipeline_module

    for module in (encode_module, evaluate_module, pipeline_module):
        monkeypatch.setattr(module, "build_model", refuse_loading)
    refusal = "the model has no prompt named 'passage'; its prompts: query, document, other"
    out = tmp_path / "r.json"
    pairs = write_csv(tmp_path / "p.csv", [(a, b, i % 5) for i, (a, b) in enumerate(sentence_pairs(8))])
    args = ["eval", str(prompted_bert), "--pairs", str(pairs), "--prompt-name", "passage", "--output", str(out)]
    assert_one_line_error(*run_cli(args, capsys), refusal)
    assert not out.exists()
    assert_one_line_error(*run_cli(["encode", str(prompted_bert), "a", "--prompt-name", "passage"], capsys), refusal)
    config = tmp_path / "run.yaml"
    run = {"model": str(prompted_bert), "data_dir": str(shared_senteval), "output_dir": str(tmp_path / "run")}
    config.write_text(json.dumps(run | {"prompt_name": "passage", "stages": [one_step_stage2()]}), encoding="utf-8")
    assert_one_line_error(*run_cli(["train", str(config)], capsys), refusal)
    assert not (tmp_path / "run").exists()
    code, output = run_cli(["encode", str(prompted_bert), "a", "--prompt", "x", "--prompt-name", "query"], capsys)
    assert_one_line_error(code, output, "(--prompt, prompt=) or a prompt name (--prompt-name, prompt_name=), not both")


@pytest.mark.parametrize("name", ["other", "document"])
def test_a_prompt_name_the_model_loads_with_passes_the_early_check(prompted_bert, name):
    """The saved prompts and those every SentenceTransformer starts with, as the loaded model holds them."""
    assert name in loaded(prompted_bert).prompts
    check_prompt_name(resolve_source(str(prompted_bert)), name)


def test_a_hub_models_unknown_prompt_name_is_refused_from_its_settings_alone(prompted_bert, tmp_path, monkeypatch):
    """A Hub id's two settings files are read from the cache its load reads (``SENTENCE_TRANSFORMERS_HOME`` where
    set, else the Hugging Face cache), without its weights; a Hub id nothing here holds is left to its load."""
    from huggingface_hub import constants

    weightless = tmp_path / "settings-only"
    weightless.mkdir()
    for name in ("modules.json", "config_sentence_transformers.json"):
        (weightless / name).write_bytes((prompted_bert / name).read_bytes())
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    cache = hub_cache(tmp_path / "hf", "org/prompted", weightless, "a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    with pytest.raises(PcctuneError, match="no prompt named 'passage'; its prompts: query, document, other$"):
        check_prompt_choice(None, "passage", "org/prompted")
    check_prompt_choice(None, "other", "org/prompted")
    check_prompt_choice(None, "passage", "org/not-cached")  # unknown here: its load checks it
    (weightless / "config_sentence_transformers.json").write_text("{not json", encoding="utf-8")
    hub_cache(tmp_path / "hf", "org/damaged", weightless, "b" * 40)
    check_prompt_choice(None, "passage", "org/damaged")  # a damaged settings file: its load reports it
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "elsewhere"))
    check_prompt_choice(None, "passage", "org/prompted")  # the load would not read the Hugging Face cache now


def test_a_cached_hub_model_that_holds_the_prompt_name_passes_without_asking_the_hub(
    prompted_bert, tmp_path, monkeypatch
):
    """Only a name the cached settings lack asks the Hub (an unreachable Hub makes each ask wait), before refusing."""
    from huggingface_hub import constants

    from pcctune.modeling import saving

    weightless = tmp_path / "settings-only"
    weightless.mkdir()
    for name in ("modules.json", "config_sentence_transformers.json"):
        (weightless / name).write_bytes((prompted_bert / name).read_bytes())
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # a Hub call reads the cache here instead of waiting
    monkeypatch.setattr(
        constants, "HF_HUB_CACHE", str(hub_cache(tmp_path / "hf", "org/prompted", weightless, "a" * 40))
    )
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    asked, load_file_path = [], saving.load_file_path

    def recording(*args, **kwargs):
        asked.append(kwargs["local_files_only"])
        return load_file_path(*args, **kwargs)

    monkeypatch.setattr(saving, "load_file_path", recording)
    check_prompt_choice(None, "other", "org/prompted")
    assert asked == [True, True]  # modules.json and the settings, from the cache alone
    asked.clear()
    with pytest.raises(PcctuneError, match="no prompt named 'passage'"):
        check_prompt_choice(None, "passage", "org/prompted")
    assert asked == [True, True, False, False]  # the Hub asked before the refusal


def test_training_passes_the_prompt_in_force_to_the_trainer():
    stage = StageConfig.model_validate({"name": "s", "loss": "pearson", "data": {"source": "stage2"}, "dev": "none"})
    run = RunConfig(model="m", stages=[stage])
    arguments = training_arguments(stage, run, Path("unused"), plan_batches(16), "query: ")
    assert arguments.prompts == "query: "
    assert training_arguments(stage, run, Path("unused"), plan_batches(16), None).prompts is None


def test_a_runs_stage_record_names_the_prompt_its_model_read(prompted_bert, mini_senteval, tmp_path, monkeypatch):
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))

    def trained(folder: str, **prompt: str) -> RunResult:
        payload = {"model": str(prompted_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / folder)}
        payload |= {"evaluate_before": False, "evaluate_after_each_stage": False, "stages": [one_step_stage2()]}
        return pcctune.train(RunConfig.model_validate(payload | prompt))

    assert trained("default").stages[0].prompt == "query: "
    assert trained("named", prompt_name="other").stages[0].prompt == PROMPTS["other"]
    assert trained("none", prompt="").stages[0].prompt is None


PLAIN_LOAD = (
    NO_PCCTUNE
    + """
import json, sys
from sentence_transformers import SentenceTransformer
print(json.dumps([SentenceTransformer(f, device="cpu").encode([sys.argv[1]]).tolist() for f in sys.argv[2:]]))
"""
)


def test_the_readme_python_example_saves_folders_plain_sentence_transformers_loads(tiny_bert, tmp_path):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    import pcctune

    model = pcctune.build_model(str(tiny_bert))
    rows = sentence_pairs(16)
    train = Dataset.from_dict(
        {"sentence1": [a for a, _ in rows], "sentence2": [b for _, b in rows], "score": [i % 5 / 5 for i in range(16)]}
    )
    dev = DevSTSEvaluator({"dev": [STSPair(a, b, float(i % 5)) for i, (a, b) in enumerate(rows)]}, "dev")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "run"), per_device_train_batch_size=8, max_steps=2, learning_rate=1e-3,
        eval_strategy="steps", eval_steps=1, save_steps=1, load_best_model_at_end=True,
        metric_for_best_model=f"eval_{dev.primary_metric}", dataloader_drop_last=True, use_cpu=True, report_to="none",
    )  # fmt: skip
    loss = pcctune.PearsonLoss(model)
    SentenceTransformerTrainer(model=model, args=args, train_dataset=train, loss=loss, evaluator=dev).train()
    model.save(str(tmp_path / "final"))
    folders = [tmp_path / "final", *sorted((tmp_path / "run").glob("checkpoint-*"))]
    assert len(folders) == 3
    for folder in folders:
        types = [m["type"] for m in json.loads((folder / "modules.json").read_text())]
        assert all(t.startswith("sentence_transformers.") for t in types), types
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_LOAD, TEXTS[0], *map(str, folders)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    vectors = json.loads(done.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(np.array(vectors[0]), model.encode([TEXTS[0]], convert_to_numpy=True), atol=1e-5)


def test_the_prompt_a_model_is_given_is_its_query_and_document_prompt_where_it_has_none(tiny_bert):
    """sentence-transformers' encode_query / encode_document (MTEB's retrieval and reranking tasks) read the query
    and document prompts, an empty one as "no prompt": the prompt the model is trained with must reach them too,
    where the model has none of its own."""
    from pcctune.modeling.prompts import use_prompt

    model = use_prompt(build_model(str(tiny_bert)), "sts: ")
    expected = model.encode(TEXTS, prompt="sts: ")
    np.testing.assert_allclose(model.encode_query(TEXTS), expected, atol=1e-6)
    np.testing.assert_allclose(model.encode_document(TEXTS), expected, atol=1e-6)
    own = build_model(str(tiny_bert))
    own.prompts = {"query": "query: ", "document": "passage: "}
    use_prompt(own, "sts: ")
    assert own.prompts["query"] == "query: " and own.prompts["document"] == "passage: "  # its own stay


def test_offline_a_hub_id_passes_where_the_cache_holds_it_and_is_refused_where_it_does_not(
    prompted_bert, tmp_path, monkeypatch
):
    """A sentence-transformers repo cached with its ``modules.json`` alone (an older layout keeps the backbone's
    ``config.json`` in a module folder) or a plain repo with its ``config.json`` can load offline; one not cached
    cannot, and is refused before a run reads anything; online nothing is refused here."""
    import huggingface_hub
    from huggingface_hub import constants

    from pcctune.modeling.build import check_loadable_offline

    settings, backbone = tmp_path / "settings-only", tmp_path / "backbone-only"
    settings.mkdir()
    backbone.mkdir()
    (settings / "modules.json").write_bytes((prompted_bert / "modules.json").read_bytes())
    (backbone / "config.json").write_bytes((prompted_bert / "config.json").read_bytes())
    hub_cache(tmp_path / "hf", "org/sentence", settings, "a" * 40)
    hub_cache(tmp_path / "hf", "org/plain", backbone, "b" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    monkeypatch.setattr(huggingface_hub, "is_offline_mode", lambda: True)
    check_loadable_offline(resolve_source("org/sentence"))
    check_loadable_offline(resolve_source("org/plain"))
    with pytest.raises(PcctuneError, match="'org/absent': not a packaged name or a folder, and as a Hub id not in"):
        check_loadable_offline(resolve_source("org/absent"))
    monkeypatch.setattr(huggingface_hub, "is_offline_mode", lambda: False)
    check_loadable_offline(resolve_source("org/absent"))  # online: its load fetches it or says why not
