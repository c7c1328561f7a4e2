"""Training stages and the pipeline on a tiny model: configs, resume, data of each loss."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import TrainerCallback

from pcctune.data.sts import STSPair
from pcctune.errors import PcctuneError
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.checkpoints import checkpoints
from pcctune.training.config import RunConfig, load_config
from pcctune.training.datasets import contrastive_pairs
from tests.conftest import pairs_jsonl, tiny_run


def _pairs_file(tmp_path):
    return pairs_jsonl(tmp_path / "pairs.jsonl")


def _config(model, senteval, pairs, out, **stage) -> RunConfig:
    return RunConfig.model_validate(tiny_run(model, senteval, pairs, out, **stage))


class KillAt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt("simulated kill")


@pytest.fixture(scope="module")
def whole(tiny_bert, shared_senteval, tmp_path_factory):
    """One uninterrupted tiny run, shared by the tests that compare against it or inspect its folder."""
    folder = tmp_path_factory.mktemp("whole")
    pairs = _pairs_file(folder)
    record = run_pipeline(_config(tiny_bert, shared_senteval, pairs, folder / "run"))
    return record, folder / "run", pairs


def _killed(model, senteval, pairs, out, kill_at: int):
    """The config of the whole run, killed after step ``kill_at`` into ``out``."""
    config = _config(model, senteval, pairs, out)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(config, callbacks=[KillAt(kill_at)])
    return config


def test_killed_and_resumed_run_equals_an_uninterrupted_one(tiny_bert, shared_senteval, tmp_path, whole):
    whole, _, pairs = whole
    config = _killed(tiny_bert, shared_senteval, pairs, tmp_path / "killed", kill_at=3)
    assert (tmp_path / "killed" / "stage1-pcc" / "checkpoints" / "checkpoint-2").is_dir()
    assert not (tmp_path / "killed" / "stage1-pcc" / "final").exists()
    resumed = run_pipeline(config, resume=True)
    assert resumed.sts_by_stage["pcc"] == pytest.approx(whole.sts_by_stage["pcc"], abs=1e-6)
    assert resumed.stages[0].best_dev_spearman == pytest.approx(whole.stages[0].best_dev_spearman, abs=1e-9)
    assert resumed.stages[0].best_checkpoint.endswith(whole.stages[0].best_checkpoint.split("/")[-1])
    # a finished run resumed again returns its saved result, training nothing and rewriting nothing
    saved = (tmp_path / "killed" / "results.json").read_bytes()
    again = run_pipeline(config, resume=True)
    assert again == resumed and (tmp_path / "killed" / "results.json").read_bytes() == saved


HANG_AFTER_STEP_3 = """
import pathlib, sys, time
from transformers import TrainerCallback
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.config import RunConfig

class Hang(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 3:
            pathlib.Path(sys.argv[2]).touch()
            time.sleep(600)

run_pipeline(RunConfig.model_validate_json(pathlib.Path(sys.argv[1]).read_text()), callbacks=[Hang()])
"""


def test_a_process_killed_outright_resumes_to_the_same_run(tiny_bert, shared_senteval, tmp_path, whole):
    """SIGKILL, as when a machine is taken away: no handler runs, the lock and any staging stay behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    whole, _, pairs = whole
    config = _config(tiny_bert, shared_senteval, pairs, tmp_path / "killed")
    (tmp_path / "config.json").write_text(config.model_dump_json())
    marker = tmp_path / "after-step-3"
    child = subprocess.Popen([sys.executable, "-c", HANG_AFTER_STEP_3, str(tmp_path / "config.json"), str(marker)])
    try:
        deadline = time.monotonic() + 300
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the child never reached step 3"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert (tmp_path / "killed" / ".lock").is_file()  # left by the dead process
    assert (tmp_path / "killed" / "stage1-pcc" / "checkpoints" / "checkpoint-2").is_dir()
    resumed = run_pipeline(config, resume=True)
    assert resumed.sts_by_stage["pcc"] == pytest.approx(whole.sts_by_stage["pcc"], abs=1e-6)
    assert resumed.stages[0].best_dev_spearman == pytest.approx(whole.stages[0].best_dev_spearman, abs=1e-9)
    assert not (tmp_path / "killed" / ".lock").exists()


def test_a_checkpoint_made_by_the_clock_resumes_to_the_same_run_and_does_not_stay(
    tiny_bert, shared_senteval, tmp_path, whole
):
    whole, _, pairs = whole
    config = _config(tiny_bert, shared_senteval, pairs, tmp_path / "clock", save_every_minutes=1e-9)  # due every step
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(config, callbacks=[KillAt(4)])  # the kill comes before step 4's save
    folder = tmp_path / "clock" / "stage1-pcc" / "checkpoints"
    # step 1's resume point was removed by step 2's regular checkpoint; step 3's is the newest
    assert [p.name for p in checkpoints(folder)] == ["checkpoint-2", "checkpoint-3"]
    resumed = run_pipeline(config, resume=True)
    assert resumed.sts_by_stage["pcc"] == pytest.approx(whole.sts_by_stage["pcc"], abs=1e-6)
    assert resumed.stages[0].best_checkpoint.endswith(whole.stages[0].best_checkpoint.split("/")[-1])
    assert all(int(p.name.split("-")[1]) % 2 == 0 for p in checkpoints(folder))  # no resume point outlives the run


def test_stage_writes_final_model_curves_and_selects_on_dev(whole):
    record, run, _ = whole
    stage_dir = run / "stage1-pcc"
    assert (stage_dir / "final" / "modules.json").is_file()
    assert (stage_dir / "curves.png").stat().st_size > 1000
    history = json.loads((stage_dir / "log_history.json").read_text())
    dev = [e["eval_sick-trial_spearman_cosine"] for e in history if "eval_sick-trial_spearman_cosine" in e]
    assert record.stages[0].best_dev_spearman == pytest.approx(max(dev))
    saved = json.loads((run / "results.json").read_text())
    assert set(saved["sts_by_stage"]["pcc"]) >= {"STS12", "SICKRelatedness", "avg"}
    assert (run / "config.yaml").is_file()


def test_compare_runs_the_last_stage_once_per_loss(tiny_bert, mini_senteval, tmp_path):
    pairs = pairs_jsonl(tmp_path / "distinct.jsonl", distinct=True)  # the contrastive stage's in-batch negatives
    config = _config(tiny_bert, mini_senteval, pairs, tmp_path / "cmp", contrastive_threshold=2.0)
    record = run_pipeline(config, compare=["pearson", "contrastive"])
    assert set(record.sts_by_stage) == {"pcc-pearson", "pcc-contrastive"}
    examples = {s.stage: s.train_examples for s in record.stages}
    assert examples["pcc-pearson"] == 48 and examples["pcc-contrastive"] < 48


def test_a_compare_variant_starts_from_the_run_seed_whatever_ran_before_it(tiny_bert, mini_senteval, tmp_path):
    """An MLP head is drawn at each stage's load: the second --compare variant draws the same first weights as the
    same loss trained alone, not weights that depend on the first variant's draws."""
    from safetensors.torch import load_file

    def config(out):
        run = _config(tiny_bert, mini_senteval, _pairs_file(tmp_path), tmp_path / out, max_steps=1)
        return run.model_copy(update={"pooling_head": "mlp", "evaluate_before": False})

    def weights(folder):
        return {key: value for f in sorted(folder.rglob("*.safetensors")) for key, value in load_file(f).items()}

    run_pipeline(
        config("alone").model_copy(update={"stages": [config("x").stages[0].model_copy(update={"loss": "cosine_mse"})]})
    )
    run_pipeline(config("both"), compare=["pearson", "cosine_mse"])
    alone, second = (
        weights(tmp_path / "alone" / "stage1-pcc" / "final"),
        weights(tmp_path / "both" / "stage1-pcc-cosine_mse" / "final"),
    )
    assert alone.keys() == second.keys() and all(torch.equal(alone[key], second[key]) for key in alone)


def test_lora_adapter_trains_only_the_adapter(tiny_llama, mini_senteval, tmp_path):
    config = _config(tiny_llama, mini_senteval, _pairs_file(tmp_path), tmp_path / "lora", max_steps=2)
    config = config.model_copy(
        update={
            "adapter": config.adapter.model_copy(update={"kind": "lora", "r": 2}),
            "template": 'This sentence : "{text}" means in one word:"',
        }
    )
    record = run_pipeline(config)
    assert 0 < record.stages[0].trainable_fraction < 0.5


def test_second_lora_stage_continues_training_the_first_stage_adapter(tiny_llama, mini_senteval, tmp_path):
    from safetensors.torch import load_file

    config = _config(tiny_llama, mini_senteval, _pairs_file(tmp_path), tmp_path / "two", max_steps=2)
    stage = config.stages[0]
    config = config.model_copy(
        update={
            "adapter": config.adapter.model_copy(update={"kind": "lora", "r": 2}),
            "stages": [stage.model_copy(update={"name": "one"}), stage.model_copy(update={"name": "two"})],
        }
    )
    record = run_pipeline(config)
    fractions = [s.trainable_fraction for s in record.stages]
    assert fractions[0] > 0 and fractions[1] == pytest.approx(fractions[0])
    first = load_file(tmp_path / "two" / "stage1-one" / "final" / "adapter_model.safetensors")
    second = load_file(tmp_path / "two" / "stage2-two" / "final" / "adapter_model.safetensors")
    assert first.keys() == second.keys()
    assert any(not torch.equal(first[k], second[k]) for k in first)


def test_a_saved_lora_folder_as_the_model_continues_training_its_adapter(tiny_bert, mini_senteval, tmp_path):
    """No ``adapter:`` block: the saved adapter trains on (its base frozen) and the run saves it changed."""
    from safetensors.torch import load_file

    from pcctune.modeling.adapters import attach_adapter
    from pcctune.modeling.build import build_model
    from pcctune.training.config import AdapterConfig

    saved = tmp_path / "lora-run"
    model = build_model(str(tiny_bert))
    attach_adapter(model, AdapterConfig(kind="lora", r=2, alpha=4))
    model.save(str(saved))
    record = run_pipeline(
        _config(saved, mini_senteval, _pairs_file(tmp_path), tmp_path / "on", max_steps=2, dev="none")
    )
    assert 0 < record.stages[0].trainable_fraction < 0.5
    before = load_file(saved / "adapter_model.safetensors")
    after = load_file(tmp_path / "on" / "stage1-pcc" / "final" / "adapter_model.safetensors")
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_eval_dtype_bf16_encodes_the_test_sets_in_bf16(tiny_bert, mini_senteval, tmp_path, monkeypatch):
    import pcctune.orchestration.pipeline as pipeline

    seen = []

    def spy(model, tasks, **kwargs):
        seen.append(next(model.parameters()).dtype)
        return real(model, tasks, **kwargs)

    real = pipeline.evaluate_sts
    monkeypatch.setattr(pipeline, "evaluate_sts", spy)
    config = _config(tiny_bert, mini_senteval, _pairs_file(tmp_path), tmp_path / "bf16", max_steps=1)
    run_pipeline(config.model_copy(update={"eval_dtype": "bf16", "evaluate_before": True}))
    assert seen == [torch.bfloat16, torch.bfloat16]


def test_contrastive_baseline_keeps_pairs_above_four():
    pairs = [STSPair("a", "b", 4.0), STSPair("c", "d", 4.2), STSPair("e", "f", 5.0), STSPair("g", "h", 1.0)]
    assert [p.sentence1 for p in contrastive_pairs(pairs, 4.0)] == ["c", "e"]


def test_config_errors_are_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: x\nstages:\n  - name: a\n    loss: hinge\n    data: {source: stage2}\n")
    with pytest.raises(PcctuneError, match=r"stages.0.loss"):
        load_config(path)
    path.write_text("model: x\ntemplate: no slot\nstages: []\n")
    with pytest.raises(PcctuneError, match="exactly one"):
        load_config(path)
    with pytest.raises(PcctuneError, match="missing config"):
        load_config(tmp_path / "nope.yaml")


def test_dev_sets_never_contain_a_test_pair(mini_senteval):
    from pcctune.data.dev import dev_parts
    from pcctune.data.leakage import TestIndex
    from pcctune.data.senteval import load_sick
    from pcctune.data.tasks import load_test_tasks

    leakage = TestIndex(load_test_tasks(mini_senteval))
    trial = load_sick(mini_senteval, "dev").pairs
    assert any(leakage.matches(p) for p in trial)  # the fixture's trial split shares a pair with a test set
    for kind in ("sick-trial", "stsb-dev-filtered", "sick-trial+stsb-dev"):
        for pairs in dev_parts(kind, mini_senteval).values():
            assert pairs and not any(leakage.matches(p) for p in pairs)


def test_combined_dev_score_is_the_size_weighted_mean_of_each_sets_spearman(tiny_bert):
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer

    from pcctune.training.dev import DevSTSEvaluator

    sentences = ["a cat sits", "a dog runs", "the sun is hot", "rain falls", "birds fly", "fish swim", "a man reads"]
    first = [STSPair(sentences[i], sentences[i + 1], float(i)) for i in range(5)]
    second = [STSPair(sentences[i], sentences[(i + 3) % 7], float(7 - i)) for i in range(7)]
    model = SentenceTransformer(str(tiny_bert), device="cpu")
    metrics = DevSTSEvaluator({"one": first, "two": second}, "both")(model)

    def spearman(pairs: list[STSPair]) -> float:
        a, b = model.encode([p.sentence1 for p in pairs]), model.encode([p.sentence2 for p in pairs])
        cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        return float(spearmanr(cosine, [p.score for p in pairs]).statistic)

    assert metrics["both_one_spearman_cosine"] == pytest.approx(spearman(first), abs=1e-6)
    assert metrics["both_two_spearman_cosine"] == pytest.approx(spearman(second), abs=1e-6)
    weighted = (5 * spearman(first) + 7 * spearman(second)) / 12
    assert metrics["both_spearman_cosine"] == pytest.approx(weighted, abs=1e-6)


def test_resume_from_any_checkpoint(tiny_bert, shared_senteval, tmp_path, whole, monkeypatch):
    import shutil

    import pcctune.orchestration.pipeline as stage_module

    whole, _, pairs = whole
    config = _killed(tiny_bert, shared_senteval, pairs, tmp_path / "killed", kill_at=5)
    early = tmp_path / "killed" / "stage1-pcc" / "checkpoints" / "checkpoint-2"  # not the last one (checkpoint-4)
    assert early.is_dir() and (early.parent / "checkpoint-4").is_dir()
    with pytest.raises(PcctuneError, match="not a trainer checkpoint"):
        run_pipeline(config, resume_from=str(tmp_path))
    elsewhere = tmp_path / "other" / "stage1-pcc" / "checkpoints" / "checkpoint-2"
    shutil.copytree(early, elsewhere)
    with pytest.raises(PcctuneError, match="not a checkpoint of this run"):
        run_pipeline(config, resume_from=str(elsewhere))
    monkeypatch.chdir(tmp_path)  # a relative path names the same checkpoint
    checkpoint_4 = early.parent / "checkpoint-4"
    seen: list[bool] = []
    original = stage_module.run_stage

    def watched(*args, **kwargs):  # the abandoned run's later checkpoint is gone before the stage continues
        seen.append(checkpoint_4.exists())
        return original(*args, **kwargs)

    monkeypatch.setattr("pcctune.orchestration.pipeline.run_stage", watched)
    resumed = run_pipeline(config, resume_from=str(early.relative_to(tmp_path)))
    assert seen == [False]
    assert resumed.sts_by_stage["pcc"] == pytest.approx(whole.sts_by_stage["pcc"], abs=1e-6)


def test_stage_max_seq_length_applies_to_training_only(tiny_bert, mini_senteval, tmp_path):
    from pcctune.modeling.build import build_model

    config = _config(tiny_bert, mini_senteval, _pairs_file(tmp_path), tmp_path / "len", max_seq_length=8, max_steps=1)
    run_pipeline(config)
    saved = build_model(str(tmp_path / "len" / "stage1-pcc" / "final"))
    assert saved.max_seq_length == build_model(str(tiny_bert)).max_seq_length != 8


def test_a_dev_set_emptied_by_the_leakage_filter_is_one_clear_error(mini_senteval):
    from pcctune.data.dev import dev_parts

    stsb = mini_senteval / "downstream" / "STS" / "STSBenchmark" / "sts-dev.csv"
    stsb.write_text(stsb.read_text().splitlines()[0] + "\n")  # only the pair STS12 also holds
    with pytest.raises(PcctuneError, match=r"'stsb-dev-filtered' keeps 0 pairs .* \(sick-trial, holdout, none\)"):
        dev_parts("sick-trial+stsb-dev", mini_senteval)
    assert len(dev_parts("sick-trial", mini_senteval)["sick-trial"]) >= 2


def test_a_stage_shows_its_progress_bar_when_transformers_is_told_to_be_quiet():
    """TRANSFORMERS_VERBOSITY=error silences warnings; transformers would also hide the trainer's progress bar."""
    from pathlib import Path

    from transformers.utils import logging as hf_logging

    from pcctune.training.batching import plan_batches
    from pcctune.training.config import StageConfig
    from pcctune.training.stage import training_arguments

    stage = StageConfig.model_validate({"name": "s", "loss": "pearson", "data": {"source": "stage2"}, "dev": "none"})
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        arguments = training_arguments(stage, RunConfig(model="m", stages=[stage]), Path("unused"), plan_batches(16))
    finally:
        hf_logging.set_verbosity(level)
    assert arguments.disable_tqdm is False


def test_a_run_is_resumed_only_on_the_data_its_recorded_scores_rest_on(tiny_bert, shared_senteval, tmp_path):
    pairs = _pairs_file(tmp_path)
    config = _config(tiny_bert, shared_senteval, pairs, tmp_path / "run").model_copy(update={"evaluate_before": True})
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(config, callbacks=[KillAt(3)])
    assert "before" in json.loads((tmp_path / "run" / "results.partial.json").read_text())["sts_by_stage"]
    from pcctune.evaluation.protocols import load_protocol_tasks

    tasks = load_protocol_tasks(shared_senteval, config.eval_protocol)
    with pytest.raises(PcctuneError, match="was scored on other test sets"):
        run_pipeline(config, resume=True, tasks=tasks[:2])
    original = pairs.read_text()
    pairs.write_text(original.replace('"score": 0.0', '"score": 0.5', 1))
    with pytest.raises(PcctuneError, match=r"pairs.jsonl is not the file the run began with \(1 data file"):
        run_pipeline(config, resume=True)
    pairs.write_text(original)
    assert run_pipeline(config, resume=True).sts_by_stage.keys() == {"before", "pcc"}


def test_resume_checks_data_by_name_and_by_content_where_an_older_record_named_files_otherwise(tmp_path):
    from pcctune.orchestration.run_checks import check_same_data
    from pcctune.results import RunResult

    def record(files: dict[str, str]) -> RunResult:
        return RunResult(protocol="simcse-senteval", data_dir="d", seed=1, config={}, data_files_sha256=files)

    now = record({"STS/STS12/a.txt": "1" * 64, "fold1.csv": "2" * 64, "fold2.csv": "3" * 64})
    check_same_data(record({"/old/abs/a.txt": "1" * 64, "fold1.csv": "2" * 64}), now, tmp_path)  # renamed only
    with pytest.raises(PcctuneError, match="fold1.csv is not the file the run began with"):
        check_same_data(record({"fold1.csv": "9" * 64}), now, tmp_path)  # changed in place
    with pytest.raises(PcctuneError, match=r"\(2 data file"):
        check_same_data(record({"fold1.csv": "3" * 64, "fold2.csv": "2" * 64}), now, tmp_path)  # swapped
    check_same_data(record({}), now, tmp_path)  # a record from before hashes were kept: not checked


def test_a_stage_saved_but_not_yet_recorded_when_killed_is_recorded_on_resume(
    tiny_bert, mini_senteval, tmp_path, monkeypatch
):
    """A kill between a stage's saved model and its record: the resumed run finishes that stage again (its
    checkpoints hold every step) rather than skip it and lose its record."""
    from pcctune.orchestration import pipeline
    from tests.conftest import one_step_stage2

    run = {"model": str(tiny_bert), "data_dir": str(mini_senteval), "output_dir": str(tmp_path / "out")}
    stages = [one_step_stage2(name="a"), one_step_stage2(name="b")]
    config = RunConfig.model_validate(run | {"tasks": "none", "evaluate_before": False, "stages": stages})
    real = pipeline.stage_record

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "stage_record", killed)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(config)
    assert (tmp_path / "out" / "stage1-a" / "final").is_dir()
    monkeypatch.setattr(pipeline, "stage_record", real)
    assert [stage.stage for stage in run_pipeline(config, resume=True).stages] == ["a", "b"]


def test_the_mlm_term_is_refused_where_several_processes_are_launched(monkeypatch):
    from pcctune.orchestration.run_checks import check_one_process_losses
    from pcctune.training.config import StageConfig

    stage = StageConfig.model_validate({"name": "d", "loss": "pearson", "data": {"source": "stage2"}})
    with_mlm = stage.model_copy(update={"mlm": stage.mlm.model_copy(update={"enabled": True})})
    monkeypatch.setenv("WORLD_SIZE", "2")
    check_one_process_losses(stage)
    with pytest.raises(PcctuneError, match="MLM term trains in one process only"):
        check_one_process_losses(with_mlm)
    monkeypatch.setenv("WORLD_SIZE", "1")
    check_one_process_losses(with_mlm)
