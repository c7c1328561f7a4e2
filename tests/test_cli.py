"""The command line: tables on success, one-line errors with exit code 2 on bad input."""

from __future__ import annotations

import re

import pytest
import typer.main

from tests.conftest import assert_one_line_error, run_cli


def test_missing_data_folder(capsys, tmp_path):
    code, out = run_cli(["data", "stage2", "--data", str(tmp_path / "nowhere")], capsys)
    assert_one_line_error(code, out, "no SentEval data folder")


def test_file_without_expected_columns(capsys, mini_senteval):
    sick = mini_senteval / "downstream" / "SICK" / "SICK_train.txt"
    sick.write_text("pair_ID\tsentence_A\n1\tA man\n", encoding="utf-8")
    code, out = run_cli(["data", "stage2", "--data", str(mini_senteval)], capsys)
    assert_one_line_error(code, out, "missing column")


def test_non_numeric_score(capsys, mini_senteval, tmp_path):
    path = mini_senteval / "downstream" / "STS" / "STS12-en-test" / "STS.gs.alpha.txt"
    path.write_text("4.0\nhigh\n1.0\n0.4\n", encoding="utf-8")
    code, out = run_cli(["data", "stage2", "--data", str(mini_senteval)], capsys)
    assert_one_line_error(code, out, "'high' is not a number")


def test_template_without_slot(capsys, tiny_bert):
    code, out = run_cli(["encode", str(tiny_bert), "a man", "--template", "no slot"], capsys)
    assert_one_line_error(code, out, "exactly one {text}")


def test_unknown_model(capsys, mini_senteval):
    code, out = run_cli(["eval", "./no/such/model", "--data", str(mini_senteval)], capsys)
    assert_one_line_error(code, out, "no such folder: ./no/such/model")


def test_an_unreachable_hub_id_names_the_models_that_work_offline(capsys, mini_senteval):
    from pcctune.modeling.registry import PACKAGED_MODELS

    code, out = run_cli(["eval", "some-org/some-model", "--data", str(mini_senteval)], capsys)
    assert_one_line_error(code, out, "the Hub is unreachable")
    assert all(name in out for name in PACKAGED_MODELS) and "all-mpnet-base-v2" in out


def test_stage2_prints_counts_and_writes_files(capsys, mini_senteval, tmp_path):
    code, out = run_cli(
        [
            "data",
            "stage2",
            "--data",
            str(mini_senteval),
            "--output",
            str(tmp_path / "s.jsonl"),
            "--report",
            str(tmp_path / "r.json"),
        ],
        capsys,
    )
    assert code == 0
    assert "STSBenchmark:train" in out and "SICKRelatedness:train" in out and "stage-2 set: 3 pairs" in out
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 3


def test_eval_prints_table(capsys, mini_senteval, tiny_bert):
    code, out = run_cli(["eval", str(tiny_bert), "--data", str(mini_senteval)], capsys)
    assert code == 0
    assert "SICK-R" in out and "avg" in out


def test_encode(capsys, tiny_llama):
    code, out = run_cli(["encode", str(tiny_llama), "a man", "a dog", "--template", "eol"], capsys)
    assert code == 0 and "(2, 32)" in out


def test_version_and_help_without_type_noise(capsys):
    from pcctune import __version__

    code, out = run_cli(["--version"], capsys)
    assert code == 0 and out.strip() == f"pcctune {__version__}"
    code, out = run_cli(["--help"], capsys)
    assert code == 0 and "--version" in out and "<bool>" not in out


@pytest.mark.parametrize("group", [[], ["data"], ["cache"]])
def test_a_group_called_bare_prints_its_help_not_an_error(group, capsys):
    code, out = run_cli(group, capsys)
    assert code == 2 and out.startswith("Usage: ") and "Commands" in out
    assert "error:" not in out and "--help')" not in out


def _choices_in_help(help_text: str) -> list[str]:
    """The words an option's help offers as "a | b (note) | c": the last word before the first bar, the first after
    each bar."""
    first, *rest = help_text.split("|")
    return [re.findall(r"(\w+)\s*(?:\([^)]*\))?\s*$", first)[0], *(re.match(r"\s*(\w+)", part)[1] for part in rest)]


def test_eval_help_names_exactly_the_choices_each_option_accepts():
    """The choices are checked against the library's tuples; each option's help must name the same ones."""
    from pcctune.cli import app
    from pcctune.data.task_selection import TASK_GROUPS
    from pcctune.orchestration.evaluate import BACKENDS, POOLINGS, PROBES, QUANTIZATIONS

    command = typer.main.get_command(app).commands["eval"]  # type: ignore[attr-defined]
    helps = {param.name: param.help or "" for param in command.params}
    checked = {"tasks": TASK_GROUPS, "pooling": POOLINGS, "backend": BACKENDS, "quantization": QUANTIZATIONS}
    for option, choices in (checked | {"probe": PROBES}).items():
        assert _choices_in_help(helps[option]) == list(choices), (option, helps[option])


def test_eval_defaults_are_the_librarys():
    """An option of ``pcctune eval`` defaults to what ``run_eval`` does when it is not given; ``--pairs`` and
    ``--split`` default to "not given" (None) and the command then leaves ``run_eval``'s own default in place (the
    model and the data folder are arguments ``run_eval`` requires)."""
    import inspect

    from pcctune.cli.evaluation import eval_command
    from pcctune.orchestration.evaluate import run_eval

    library = inspect.signature(run_eval).parameters
    command = inspect.signature(eval_command).parameters
    defaulted = {name for name, parameter in library.items() if parameter.default is not inspect.Parameter.empty}
    shared = sorted(defaulted & set(command) - {"pairs", "split"})
    assert {"tasks", "protocol", "backend", "quantization", "probe", "seed", "dtype"} <= set(shared)
    assert [(name, command[name].default) for name in shared] == [(name, library[name].default) for name in shared]
