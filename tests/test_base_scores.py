"""The base model's test scores are kept between runs: a second run that scores the same base model the same way
reads them from the cache (whatever its seed); other weights, template or test set is scored afresh."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from pcctune.orchestration import pipeline
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.config import RunConfig
from tests.conftest import one_step_stage2


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """A private cache, and the number of test evaluations the pipeline runs."""
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    calls = []
    real = pipeline.evaluate_sts

    def evaluate_sts(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "evaluate_sts", evaluate_sts)
    return calls


def run(model, senteval, out, **settings):
    payload = {"model": str(model), "data_dir": str(senteval), "output_dir": str(out), "evaluate_before": True}
    return run_pipeline(RunConfig.model_validate(payload | settings | {"stages": [one_step_stage2()]}))


def test_a_second_run_reads_the_base_models_scores_and_another_setting_scores_again(
    counted, tiny_bert, mini_senteval, tmp_path
):
    first = run(tiny_bert, mini_senteval, tmp_path / "a")
    assert len(counted) == 2 and "before" in first.eval_wall_time_s  # before and after training
    second = run(tiny_bert, mini_senteval, tmp_path / "b")
    assert len(counted) == 3 and second.sts_by_stage["before"] == first.sts_by_stage["before"]
    assert "before" not in second.eval_wall_time_s  # nothing encoded: read from the cache
    run(tiny_bert, mini_senteval, tmp_path / "c", template="This sentence : {text}")
    assert len(counted) == 5
    run(tiny_bert, mini_senteval, tmp_path / "d", seed=7)
    assert len(counted) == 6  # another seed: the same base score, read from the cache


def test_a_model_whose_weights_changed_in_place_is_scored_again(counted, tiny_bert, mini_senteval, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    run(model, mini_senteval, tmp_path / "a")
    (model / "config.json").write_text((model / "config.json").read_text() + "\n")  # the same model as loaded
    run(model, mini_senteval, tmp_path / "b")
    assert len(counted) == 3
    redraw_weights(model)  # same path, same name, other weights
    run(model, mini_senteval, tmp_path / "c")
    assert len(counted) == 5


def test_other_test_pairs_are_scored_again(counted, tiny_bert, mini_senteval, tmp_path):
    from pcctune.evaluation.protocols import load_protocol_tasks

    tasks = load_protocol_tasks(mini_senteval, "simcse-senteval")
    config = {"model": str(tiny_bert), "data_dir": str(mini_senteval), "evaluate_before": True}
    for out, chosen in (("a", tasks), ("b", tasks[:3])):
        payload = config | {"output_dir": str(tmp_path / out), "stages": [one_step_stage2()]}
        run_pipeline(RunConfig.model_validate(payload), tasks=chosen)
    assert len(counted) == 4


def test_a_lora_folder_whose_base_changed_in_place_is_scored_afresh_through_the_command_line(
    counted, tiny_bert, mini_senteval, tmp_path, capsys
):
    """``pcctune train`` from a saved LoRA folder twice with one cache, its base's weights changed in place between
    the runs: the second run's "before" is a fresh ``pcctune eval`` of the changed model, not the first run's."""
    import yaml

    from pcctune.modeling.adapters import attach_adapter
    from pcctune.training.config import AdapterConfig
    from tests.conftest import run_cli

    base = tmp_path / "base"
    shutil.copytree(tiny_bert, base)
    model = pipeline.load_base(
        RunConfig.model_validate({"model": str(base), "stages": [one_step_stage2()]}), head=False
    )
    attach_adapter(model, AdapterConfig(kind="lora", r=4, alpha=8))
    adapter = tmp_path / "lora-run"
    model.save(str(adapter))

    def train(name: str) -> dict:
        config = {"model": str(adapter), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / name)}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config | {"evaluate_before": True, "stages": [one_step_stage2()]}))
        code, output = run_cli(["train", str(path)], capsys)
        assert code == 0, output
        return json.loads((tmp_path / name / "results.json").read_text())["sts_by_stage"]["before"]

    first = train("a")
    redraw_weights(base)
    second = train("b")
    code, output = run_cli(
        ["eval", str(adapter), "--data", str(mini_senteval), "--output", str(tmp_path / "e.json")], capsys
    )
    assert code == 0, output
    fresh = json.loads((tmp_path / "e.json").read_text())["sts"]
    assert second != first
    assert second == {task: round(score, 4) for task, score in fresh.items()}


def redraw_weights(folder) -> None:
    """Every weight matrix of ``folder``'s model drawn anew, in place (same path, same file name)."""
    generator = torch.Generator().manual_seed(1)
    tensors = load_file(folder / "model.safetensors")
    redrawn = {n: torch.randn(v.shape, generator=generator) if v.ndim == 2 else v for n, v in tensors.items()}
    save_file(redrawn, folder / "model.safetensors")
