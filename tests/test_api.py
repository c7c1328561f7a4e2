"""The Python API: documented names that fit a plain sentence-transformers script."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import pcctune
from pcctune.modeling.template import model_template
from pcctune.results import EvalResult
from pcctune.testing import write_tokenized_copy

ROOT = Path(__file__).parents[1]


@pytest.mark.parametrize("name", pcctune.__all__)
def test_every_public_name_resolves_and_has_a_docstring(name):
    value = getattr(pcctune, name)
    assert name == "__version__" or (value.__doc__ or "").strip(), name


def test_import_pcctune_stays_light():
    code = "import sys, pcctune; print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr[-500:]


def test_datasets_and_evaluation_for_a_plain_st_script(tiny_bert, tiny_llama, shared_senteval):
    stage2 = pcctune.stage2_dataset(shared_senteval)
    assert stage2.column_names == ["sentence1", "sentence2", "score"] and len(stage2) > 0
    assert json.loads(stage2.info.description)["total_kept"] == len(stage2)
    triplets = pcctune.nli_triplets(shared_senteval)
    assert triplets.column_names == ["anchor", "positive", "negative"] and len(triplets) == 12
    model = pcctune.build_model(str(tiny_bert))
    result = pcctune.evaluate(model, data=shared_senteval)
    evaluator = pcctune.PccEvaluator(shared_senteval)
    assert evaluator(model)["sts_avg"] == pytest.approx(result.sts["avg"], abs=1e-3)
    from sentence_transformers import SentenceTransformer

    decoder = SentenceTransformer(str(tiny_llama))
    pcctune.apply_template(decoder, "eol")
    assert pcctune.evaluate(decoder, data=shared_senteval).template == 'This sentence : "{text}" means in one word:"'


def test_evaluate_records_the_precision_the_model_was_loaded_in(tiny_bert, tiny_llama, shared_senteval):
    """A model handed in loaded is recorded as it is, not as the defaults of ``pcctune eval``'s options."""
    plain = pcctune.evaluate(pcctune.build_model(str(tiny_bert)), data=shared_senteval)
    assert (plain.dtype, plain.quantization) == ("fp32", "none")
    half = pcctune.evaluate(pcctune.build_model(str(tiny_bert), dtype="bf16"), data=shared_senteval)
    assert (half.dtype, half.quantization) == ("bf16", "none")
    quantized = pcctune.build_model(str(tiny_llama), template="eol", quantization={"quant_type": "nf4"}, device="cpu")
    four_bit = pcctune.evaluate(quantized, data=shared_senteval)
    assert (four_bit.dtype, four_bit.quantization) == ("fp32", "nf4")


def test_the_evaluator_the_trainer_runs_on_rank_0_alone_encodes_unsharded(tiny_bert, shared_senteval, monkeypatch):
    """Under DDP the trainer runs an evaluator on rank 0 while the other ranks wait in sentence-transformers' own
    collective: a sharded encoding would call a collective they never join."""
    import pcctune.evaluation.sts as sts

    sharded: list[bool] = []
    encode_unique = sts.encode_unique

    def recorded(model, sentences, shard=True, **options):
        sharded.append(shard)
        return encode_unique(model, sentences, shard, **options)

    monkeypatch.setattr(sts, "encode_unique", recorded)
    pcctune.PccEvaluator(shared_senteval)(pcctune.build_model(str(tiny_bert)))
    assert sharded == [False]


@pytest.mark.parametrize(
    ("terminal", "option", "shown"),
    [(True, None, True), (False, None, False), (False, True, True), (True, False, False)],
    ids=["terminal", "redirected", "asked-for", "turned-off"],
)
def test_evaluate_shows_its_progress_bar_on_a_terminal_unless_told(
    tiny_bert, shared_senteval, capsys, monkeypatch, terminal, option, shown
):
    model = pcctune.build_model(str(tiny_bert))
    capsys.readouterr()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    pcctune.evaluate(model, data=shared_senteval, show_progress_bar=option)
    assert ("Encoding" in capsys.readouterr().err) == shown


@pytest.mark.parametrize("script", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_example_runs_on_tiny_models(script, tiny_bert, tiny_llama, mini_senteval, tmp_path):
    write_tokenized_copy(mini_senteval)  # the paper protocol's text form
    model = tiny_llama if "decoder" in script.name else tiny_bert
    args = ["--model", str(model), "--data", str(mini_senteval), "--output", str(tmp_path / "out")]
    if "evaluate" not in script.name:  # the scripts that train
        args += ["--batch-size", "2", "--max-steps", "2"]
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'avg':" in done.stdout
    if "evaluate" in script.name:  # both protocols' records, and the evaluator agrees with the paper protocol's
        paper = EvalResult.from_disk(tmp_path / "out" / "eval.paper.json")
        assert EvalResult.from_disk(tmp_path / "out" / "eval.simcse-senteval.json").protocol == "simcse-senteval"
        assert f"PccEvaluator: {{'avg': {round(paper.sts['avg'], 2)}}}" in done.stdout


def test_a_tiny_run_writes_tensorboard_events(tiny_bert, shared_senteval, tmp_path):
    pytest.importorskip("tensorboard")
    from tests.conftest import one_step_stage2

    config = {
        "model": str(tiny_bert),
        "data_dir": str(shared_senteval),
        "output_dir": str(tmp_path / "run"),
        "evaluate_before": False,
        "report_to": "tensorboard",
        "stages": [one_step_stage2(logging_steps=1)],
    }
    pcctune.train(pcctune.RunConfig.model_validate(config))
    events = list((tmp_path / "run").rglob("events.out.tfevents.*"))
    assert events and all(path.stat().st_size > 0 for path in events)


def test_the_package_docstring_example_trains_offline_with_the_documented_batch_settings():
    """The example the API reference opens with (``pcctune``'s docstring) loads the packaged model through pcctune,
    which needs no download, and trains with the Pearson group and dropped last batch that Getting started asks for
    and the batch, epochs and learning rate of ``configs/minilm_stage2.yaml``, not the trainer's defaults."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    [example] = re.findall(r"\n\n((?:    .*\n|\n)+?)\n(?! )", pcctune.__doc__ or "")
    code = textwrap.dedent(example)
    tree = ast.parse(code)
    call = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.value).startswith("SentenceTransformerTrainingArguments(")
    )
    names = {"SentenceTransformerTrainingArguments": SentenceTransformerTrainingArguments}
    args = eval(compile(ast.Expression(call), "pcctune.__doc__", "eval"), names)
    stage = yaml.safe_load((ROOT / "configs" / "minilm_stage2.yaml").read_text(encoding="utf-8"))["stages"][0]
    assert args.per_device_train_batch_size == stage["batch_size"] != 8 and args.dataloader_drop_last
    assert args.num_train_epochs == stage["epochs"] and abs(args.learning_rate - stage["learning_rate"]) < 1e-6
    assert 'pcctune.build_model("all-MiniLM-L6-v2")' in code and "args=args" in code
    assert "SentenceTransformer(" not in code  # sentence-transformers' loader would ask the Hub for the name


def test_a_preset_template_applies_to_any_built_model(tiny_llama):
    model = pcctune.build_model(str(tiny_llama))
    pcctune.apply_template(model, "eol")
    built = pcctune.build_model(str(tiny_llama), template="eol")
    assert model_template(model) == model_template(built) is not None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, d: pcctune.evaluate(str(d), data=d), "evaluate scores a loaded model, not a str"),
        (lambda m, d: pcctune.evaluate(m, pairs=[]), "pairs is empty"),
        (lambda m, d: pcctune.evaluate(m, pairs={"sentence1": ["a"]}), "not a dict"),
        (lambda m, d: pcctune.PccEvaluator(data=d)("my-model"), "not a str"),
        (lambda m, d: pcctune.build_model(""), "no model named"),
        (lambda m, d: pcctune.build_model("all-MiniLM-L6-v2", max_seq_length=0), "at least 1"),
        (lambda m, d: pcctune.stage2_dataset(d, leakage="none"), "unknown leakage level 'none'; choose from pair"),
        (lambda m, d: pcctune.DevSTSEvaluator.named([], data=d), "needs a dev set"),
        (lambda m, d: pcctune.paired_bootstrap([1, 2, 3, 4], [1, 2, 4, 3], [2, 1, 3, 4], confidence=95), "0.95"),
        (lambda m, d: pcctune.seed_difference({1: 1.0, 2: 2.0}, {1: 1.5, 2: "2.6"}), "finite numbers"),
        (lambda m, d: pcctune.holm_differences({"x": ({1: float("nan"), 2: 2.0}, {1: 1.5, 2: 2.6})}), "is nan"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_bad_arguments_to_the_api_are_one_clear_error(call, message, tiny_bert, shared_senteval):
    from pcctune.errors import PcctuneError

    with pytest.raises(PcctuneError, match=re.escape(message)):
        call(pcctune.build_model(str(tiny_bert)), shared_senteval)


def test_a_dev_evaluator_takes_its_level_by_name(shared_senteval):
    from pcctune.data.leakage import LeakageLevel

    by_name = pcctune.DevSTSEvaluator.named("sick-trial", data=shared_senteval, level="pair")
    by_level = pcctune.DevSTSEvaluator.named("sick-trial", data=shared_senteval, level=LeakageLevel.pair)
    assert by_name.parts == by_level.parts


def test_a_collapsed_model_is_one_clear_error_not_a_nan_score(tiny_bert, shared_senteval):
    from pcctune.errors import PcctuneError

    model = pcctune.build_model(str(tiny_bert))
    next(p for p in model.parameters() if p.ndim == 2).data.fill_(float("nan"))  # training diverged
    with pytest.raises(PcctuneError, match="have no correlation with the gold scores"):
        pcctune.evaluate(model, data=shared_senteval)


def test_train_names_what_it_takes_when_given_a_mapping():
    import pcctune

    with pytest.raises(TypeError, match=r"a RunConfig or the path of a YAML config, not a dict; from a mapping: "):
        pcctune.train({"model": "all-MiniLM-L6-v2"})


def test_a_quiet_console_quiets_a_run_and_an_evaluation_and_the_default_one_prints_their_tables(
    tiny_bert, mini_senteval, tmp_path, capsys
):
    from rich.console import Console

    from tests.conftest import one_step_stage2

    def config(out: str) -> pcctune.RunConfig:
        settings = {"model": str(tiny_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / out)}
        return pcctune.RunConfig.model_validate(settings | {"stages": [one_step_stage2(logging_steps=1)]})

    capsys.readouterr()
    quiet = pcctune.train(config("quiet"), console=Console(quiet=True))
    printed = capsys.readouterr()
    assert printed.out == ""  # neither the score table nor the trainer's log lines
    assert "Encoding" not in printed.err  # nor the test evaluation's progress bar
    loud = pcctune.train(config("loud"))
    printed = capsys.readouterr()
    assert "│ pcc    │" in printed.out and "'train_runtime'" in printed.out  # the score table, the trainer's log
    assert "Encoding" in printed.err
    assert quiet.sts_by_stage == loud.sts_by_stage  # what quiet changes is what is printed, nothing else
    from pcctune.orchestration.evaluate import run_eval

    run_eval(str(tiny_bert), mini_senteval, console=Console(quiet=True))
    assert capsys.readouterr().out == ""
