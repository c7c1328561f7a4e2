"""The paper's main job on this CPU: two-stage QLoRA (NF4 4-bit base + LoRA) on a tiny Llama.

bitsandbytes ≥ 0.50 runs NF4 on CPU, so every step of the path is tested here: stage 2 trains
through ``Linear4bit`` layers and continues the stage-1 adapter of the last step (``init: final``, as the
authors); the best dev checkpoint is the one saved as ``final``; test evaluations run on the 16-bit base
with the adapter (the authors' ``--load_kbit 16``) unless ``eval_precision: 4bit``; a kill and resume mid
stage 2 changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
from transformers import TrainerCallback

from pcctune.modeling.quantization import linear_4bit_layers
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.results import RunResult
from pcctune.training.config import RunConfig
from tests.conftest import SENTENCES, pairs_jsonl

pytest.importorskip("bitsandbytes")  # installed by the test extra; skip only where a user removed it

# Dev scores by step (both stages): the best checkpoint is the first evaluation's (step 2), not the last (step 4).
SCRIPTED_DEV = {2: 0.9, 4: 0.3}


class ScriptedDev(SentenceEvaluator):
    """A dev evaluator whose score is set per step, so which checkpoint is best is known in advance."""

    def __init__(self, scores: dict[int, float]) -> None:
        super().__init__()
        self.scores = scores
        self.primary_metric = "sick-trial_spearman_cosine"

    def __call__(self, model, output_path=None, epoch=-1, steps=-1) -> dict[str, float]:
        return {self.primary_metric: self.scores[steps]}


class KillAt(TrainerCallback):
    def __init__(self, stage_dir_name: str, step: int) -> None:
        self.stage_dir_name, self.step = stage_dir_name, step

    def on_step_end(self, args, state, control, **kwargs):
        if self.stage_dir_name in args.output_dir and state.global_step == self.step:
            raise KeyboardInterrupt("killed mid stage 2")


def _lora_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A CPU copy of the model's LoRA weights (comparable with safetensors files whatever the training device)."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if "lora_" in n}


def _config(model: Path, senteval: Path, folder: Path, out: str, **run) -> RunConfig:
    pairs = pairs_jsonl(folder / "pairs.jsonl")
    stage = {
        "loss": "pearson",
        "data": {"source": "pairs", "path": str(pairs)},
        "batch_size": 8,
        "max_steps": 4,
        "eval_steps": 2,
        "learning_rate": 1e-2,
        "dev": "sick-trial",
        "sentence_max_tokens": 6,
    }
    return RunConfig.model_validate(
        {
            "model": str(model),
            "template": "eol",
            "data_dir": str(senteval),
            "output_dir": str(folder / out),
            "seed": 5,
            "evaluate_before": False,
            "adapter": {"kind": "qlora", "r": 4, "alpha": 8},
            "stages": [{"name": "one", **stage}, {"name": "two", **stage}],
            **run,
        }
    )


@pytest.fixture(scope="module")
def qlora(tiny_llama, shared_senteval, tmp_path_factory):
    """One uninterrupted two-stage QLoRA run, with what each stage trained and what each evaluation saw."""
    import pcctune.orchestration.pipeline as pipeline
    import pcctune.training.stage as stage_module

    folder = tmp_path_factory.mktemp("qlora")
    seen: dict[str, list] = {"trained": [], "evaluated": []}
    real_run_stage, real_evaluate = pipeline.run_stage, pipeline.evaluate_sts

    def spy_run_stage(model, stage, *args, **kwargs):
        lora = _lora_weights(model)
        seen["trained"].append(
            {
                "stage": stage.name,
                "linear4bit": len(linear_4bit_layers(model)),
                "lora_before": lora,
                "lora_trainable": all(p.requires_grad for n, p in model.named_parameters() if "lora_" in n),
                "model": model,
            }
        )
        return real_run_stage(model, stage, *args, **kwargs)

    def spy_evaluate(model, tasks, *args, **kwargs):
        seen["evaluated"].append((len(linear_4bit_layers(model)), model.encode(SENTENCES[:4])))
        return real_evaluate(model, tasks, *args, **kwargs)

    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "run_stage", spy_run_stage)
    patch.setattr(pipeline, "evaluate_sts", spy_evaluate)
    patch.setattr(stage_module, "dev_evaluator", lambda kind, senteval: ScriptedDev(SCRIPTED_DEV))
    try:
        record = run_pipeline(_config(tiny_llama, shared_senteval, folder, "run"))
    finally:
        patch.undo()
    return record, folder / "run", seen, folder


def _started_from(started: dict[str, torch.Tensor], adapter: Path) -> bool:
    """True when the LoRA weights a stage started with equal the saved ``adapter``'s, key for key."""
    saved = load_file(adapter)
    by_suffix = {k.split("layers.", 1)[1].replace(".weight", ""): v for k, v in saved.items()}
    return len(started) == len(saved) > 0 and all(
        torch.equal(value, by_suffix[name.split("layers.", 1)[1].replace(".default.weight", "")])
        for name, value in started.items()
    )


def test_stage_two_trains_4bit_layers_and_continues_the_last_stage_one_adapter(qlora):
    record, run, seen, _ = qlora
    one, two = seen["trained"]
    assert one["linear4bit"] > 0 and two["linear4bit"] == one["linear4bit"]
    assert two["lora_trainable"]
    stage_one = run / "stage1-one"
    # the dev-best (step 2) is stage 1's final model, but stage 2 continues the last step's adapter (step 4)
    assert record.stages[0].best_checkpoint.endswith("checkpoint-2") and record.stages[1].init == "final"
    last = load_file(stage_one / "last" / "adapter_model.safetensors")
    assert all(
        torch.equal(last[k], v)
        for k, v in load_file(stage_one / "checkpoints" / "checkpoint-4" / "adapter_model.safetensors").items()
    )
    assert _started_from(two["lora_before"], stage_one / "last" / "adapter_model.safetensors")
    assert not _started_from(two["lora_before"], stage_one / "final" / "adapter_model.safetensors")
    started = two["lora_before"]
    # stage 2 changes the adapter it started from
    after = _lora_weights(two["model"])
    assert any(not torch.equal(after[n], started[n]) for n in started)
    assert record.stages[1].trainable_fraction < 0.5


def test_every_saved_model_keeps_whole_sentences_though_training_cut_them(qlora):
    import json

    _, run, _, _ = qlora
    saved = sorted(path.parent for path in run.rglob("sentence_bert_config.json"))
    names = {path.relative_to(run).as_posix() for path in saved}
    assert {"stage1-one/last", "stage1-one/final", "stage2-two/final", "stage1-one/checkpoints/checkpoint-2"} <= names
    # the stages cut training sentences to 6 tokens; a saved model (the next stage's start, a test evaluation's
    # model, a checkpoint) must not carry that cut into what it encodes later
    cuts = {name: json.loads((run / name / "sentence_bert_config.json").read_text()) for name in names}
    cuts = {name: config["sentence_max_tokens"] for name, config in cuts.items()}
    assert set(cuts.values()) == {None}, cuts


def test_a_run_can_start_from_another_runs_saved_stage(qlora, tiny_llama, shared_senteval, tmp_path, capsys):
    """The decoder table's seeds 2 and 3: stage 2 alone, its ``model`` the stage-1 folder of seed 1's run; its
    adapter, exported alone, names the first run's base (the adapter continued there), not the stage-1 folder."""
    import pcctune.orchestration.pipeline as pipeline
    import pcctune.training.stage as stage_module
    from tests.conftest import run_cli

    _, run, _, folder = qlora
    config = _config(tiny_llama, shared_senteval, folder, "from_saved", evaluate_after_each_stage=False)
    config = config.model_copy(
        update={"model": str(run / "stage1-one" / "last"), "template": None, "pooling": "lasttoken"}
    )
    config.stages = config.stages[1:]
    started: list[tuple[int, dict[str, torch.Tensor]]] = []
    real_run_stage = pipeline.run_stage

    def spy(model, stage, *args, **kwargs):
        lora = _lora_weights(model)
        started.append((len(linear_4bit_layers(model)), lora))
        return real_run_stage(model, stage, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "run_stage", spy)
        patch.setattr(stage_module, "dev_evaluator", lambda kind, senteval: ScriptedDev(SCRIPTED_DEV))
        patch.setattr(pipeline, "evaluate_sts", lambda model, tasks, **kwargs: ([], 0.0))
        run_pipeline(config)
    [(linear4bit, lora)] = started
    assert linear4bit > 0  # trained on the 4-bit base
    assert _started_from(lora, run / "stage1-one" / "last" / "adapter_model.safetensors")
    adapter = tmp_path / "adapter"
    code, output = run_cli(
        ["export", str(folder / "from_saved" / "stage1-two" / "final"), "--adapter-only", "--output", str(adapter)],
        capsys,
    )
    assert code == 0, output
    assert (
        f"pcctune eval {tiny_llama} --template eol --protocol simcse-senteval --adapter {adapter}"
        in (adapter / "README.md").read_text()
    )  # the protocol the run was scored with


def test_the_best_dev_checkpoint_is_the_one_loaded(qlora):
    record, run, _, _ = qlora
    stage = run / "stage2-two"
    assert record.stages[1].best_checkpoint.endswith("checkpoint-2")
    final = load_file(stage / "final" / "adapter_model.safetensors")
    best = load_file(stage / "checkpoints" / "checkpoint-2" / "adapter_model.safetensors")
    last = load_file(stage / "checkpoints" / "checkpoint-4" / "adapter_model.safetensors")
    assert all(torch.equal(final[k], best[k]) for k in final)
    assert not all(torch.equal(final[k], last[k]) for k in final)


def test_init_best_starts_stage_two_from_the_dev_best_adapter(tiny_llama, shared_senteval, tmp_path):
    import pcctune.orchestration.pipeline as pipeline
    import pcctune.training.stage as stage_module

    config = _config(tiny_llama, shared_senteval, tmp_path, "best", evaluate_after_each_stage=False)
    config.stages[1].init = "best"
    started: list[dict[str, torch.Tensor]] = []
    real_run_stage = pipeline.run_stage

    def spy(model, stage, *args, **kwargs):
        started.append(_lora_weights(model))
        return real_run_stage(model, stage, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "run_stage", spy)
        patch.setattr(stage_module, "dev_evaluator", lambda kind, senteval: ScriptedDev(SCRIPTED_DEV))
        patch.setattr(pipeline, "evaluate_sts", lambda model, tasks, **kwargs: ([], 0.0))
        record = run_pipeline(config)
    assert not (tmp_path / "best" / "stage1-one" / "last").exists()  # nothing needs the last step
    assert _started_from(started[1], tmp_path / "best" / "stage1-one" / "final" / "adapter_model.safetensors")
    assert record.stages[1].init == "best"


def test_test_evaluations_run_on_the_16bit_base_by_default_and_4bit_on_request(qlora, tiny_llama, tmp_path):
    from pcctune.orchestration.pipeline import load_for_evaluation

    record, run, seen, folder = qlora
    assert record.eval_precision == "16bit"
    assert seen["evaluated"] and all(count == 0 for count, _ in seen["evaluated"])
    final = run / "stage2-two" / "final"
    four = load_for_evaluation(_config(tiny_llama, folder, folder, "x", eval_precision="4bit"), final)
    assert linear_4bit_layers(four)
    sixteen, quantized = seen["evaluated"][-1][1], four.encode(SENTENCES[:4])
    assert np.abs(sixteen - quantized).max() > 1e-4  # the two precisions give different vectors


def test_the_saved_model_reloads_in_4bit(qlora):
    from pcctune.modeling.build import build_model

    record, run, seen, _ = qlora
    saved = json.loads((run / "stage2-two" / "final" / "sentence_bert_config.json").read_text())
    assert saved["quantization"] == {"quant_type": "nf4", "double_quant": True, "compute_dtype": "fp32"}
    assert linear_4bit_layers(build_model(str(run / "stage2-two" / "final")))
    assert record.stages[1].peak_memory_mb and record.stages[1].memory_kind.startswith("cpu_peak_rss")


def test_kill_and_resume_mid_stage_two_gives_identical_metrics(qlora, tiny_llama, shared_senteval):
    import pcctune.orchestration.pipeline as pipeline
    import pcctune.training.stage as stage_module

    record, _, _, folder = qlora
    config = _config(tiny_llama, shared_senteval, folder, "killed")
    killed = folder / "killed"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stage_module, "dev_evaluator", lambda kind, senteval: ScriptedDev(SCRIPTED_DEV))
        with pytest.raises(KeyboardInterrupt):
            run_pipeline(config, callbacks=[KillAt("stage2-two", 3)])
        assert (killed / "stage2-two" / "checkpoints" / "checkpoint-2").is_dir()
        before_kill = RunResult.from_disk(killed / "results.partial.json")
        scored, real_evaluate = [], pipeline.evaluate_sts
        patch.setattr(
            pipeline, "evaluate_sts", lambda *args, **kwargs: scored.append(1) or real_evaluate(*args, **kwargs)
        )
        resumed = run_pipeline(config, resume=True)
    assert resumed.sts_by_stage == record.sts_by_stage
    assert resumed.stages[-1].best_checkpoint.endswith("checkpoint-2")
    # what the killed process recorded is kept: stage one is not scored again, and its record (time, memory) stays
    assert len(scored) == 1 and list(before_kill.sts_by_stage) == ["one"]
    assert [s.stage for s in resumed.stages] == ["one", "two"] and resumed.stages[0] == before_kill.stages[0]
    # stage two's cost adds the steps the killed process kept in checkpoint-2 to the resumed process's
    kept = json.loads((killed / "stage2-two" / "checkpoints" / "checkpoint-2" / "stage_cost.json").read_text())
    assert kept["sessions"] == 1 and [s.sessions for s in resumed.stages] == [1, 2]
    threads = torch.get_num_threads()  # each process that trained a stage adds its thread count
    assert [s.torch_threads for s in resumed.stages] == [[threads], [threads, threads]]
    assert 0 < kept["seconds"] < resumed.stages[1].wall_time_s
    assert 0 < kept["cpu_seconds"] < resumed.stages[1].cpu_time_s
    assert resumed.stages[1].peak_memory_mb >= kept["peak_memory_mb"] > 0
    assert not (killed / "results.partial.json").exists()  # results.json supersedes it


def test_qlora_without_bitsandbytes_is_a_clear_error(monkeypatch):
    import builtins

    from pcctune.errors import PcctuneError
    from pcctune.modeling.adapters import AdapterConfig, quantization_settings

    real_import = builtins.__import__

    def no_bitsandbytes(name, *args, **kwargs):
        if name == "bitsandbytes":
            raise ImportError("no bitsandbytes")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_bitsandbytes)
    with pytest.raises(PcctuneError, match=r"pip install 'pcctune\[qlora\]'"):
        quantization_settings(AdapterConfig(kind="qlora"))


def test_an_eval_pass_does_not_change_4bit_gradients(tiny_llama):
    """bitsandbytes repacks NF4 weights for CPU inference, after which backward is silently wrong; pcctune
    keeps the training layout, so a LoRA gradient is the same before and after an evaluation."""
    from peft import LoraConfig, TaskType

    from pcctune.modeling.build import build_model

    def first_layer_grad(evaluate_first: bool) -> torch.Tensor:
        torch.manual_seed(0)
        model = build_model(str(tiny_llama), template="eol", quantization={"quant_type": "nf4"}, device="cpu")
        torch.manual_seed(1)
        model.add_adapter(
            LoraConfig(
                r=4,
                lora_alpha=8,
                target_modules="all-linear",
                init_lora_weights=False,
                task_type=TaskType.FEATURE_EXTRACTION,
            )
        )
        if evaluate_first:
            model.encode(SENTENCES[:4])
        model.train()
        model(model.preprocess(SENTENCES[:4]))["sentence_embedding"].pow(2).sum().backward()
        return next(p.grad for n, p in model.named_parameters() if "layers.0.self_attn.q_proj.lora_A" in n)

    assert torch.allclose(first_layer_grad(False), first_layer_grad(True))


def test_export_merge_writes_one_full_precision_model_equal_to_the_adapter_on_its_base(qlora, tmp_path, capsys):
    import shutil

    from pcctune.modeling.build import build_model
    from tests.conftest import run_cli

    _, run, _, _ = qlora
    final = run / "stage2-two" / "final"
    code, output = run_cli(["export", str(final), "--merge", "--output", str(tmp_path / "merged")], capsys)
    assert code == 0, output
    files = {p.name for p in (tmp_path / "merged").iterdir()}
    assert "model.safetensors" in files and not files & {"adapter_config.json", "adapter_model.safetensors"}
    merged = build_model(str(tmp_path / "merged"))
    assert not linear_4bit_layers(merged)
    # the reference: the same adapter, unmerged, on the full-precision base
    unmerged = tmp_path / "unmerged"
    shutil.copytree(final, unmerged)
    config = json.loads((unmerged / "sentence_bert_config.json").read_text())
    (unmerged / "sentence_bert_config.json").write_text(json.dumps({**config, "quantization": None}))
    reference = build_model(str(unmerged))
    assert torch.allclose(
        merged.encode(SENTENCES[:4], convert_to_tensor=True),
        reference.encode(SENTENCES[:4], convert_to_tensor=True),
        atol=1e-5,
    )
    code, output = run_cli(["export", str(run / "stage2-two" / "final"), "--output", str(tmp_path / "x")], capsys)
    assert code == 2 and "--merge" in output


def test_an_adapter_exported_alone_in_fp16_scores_on_its_base_as_the_run_did(
    qlora, tiny_llama, shared_senteval, tmp_path, capsys
):
    from pcctune.orchestration.evaluate import eval_model
    from tests.conftest import assert_one_line_error, run_cli

    _, run, _, _ = qlora
    final, adapter = run / "stage2-two" / "final", tmp_path / "adapter"
    code, output = run_cli(
        ["export", str(final), "--adapter-only", "--dtype", "fp16", "--output", str(adapter)], capsys
    )
    assert code == 0, output
    assert {p.name for p in adapter.iterdir()} == {"adapter_config.json", "adapter_model.safetensors", "README.md"}
    tensors = load_file(adapter / "adapter_model.safetensors")
    assert tensors and all(t.dtype == torch.float16 for t in tensors.values())
    assert (
        f"pcctune eval {tiny_llama} --template eol --protocol simcse-senteval --adapter {adapter}"
        in (adapter / "README.md").read_text()
    )  # the protocol the run was scored with

    as_the_run_scored = eval_model(str(final), None, None, None, "fp32", "none", "torch")  # 16-bit base + adapter
    as_the_run_scored[0].sentence_max_tokens = None  # the stages' cut-off (6 tokens here), which the base lacks
    on_its_base = eval_model(str(tiny_llama), "eol", None, None, "fp32", "none", "torch", adapter)
    bare_base = eval_model(str(tiny_llama), "eol", None, None, "fp32", "none", "torch")
    run_vectors, rescored, bare = (m.encode(SENTENCES[:4]) for m in (as_the_run_scored, on_its_base, bare_base))
    assert np.abs(rescored - run_vectors).max() < 1e-3 < np.abs(bare - run_vectors).max()
    on_4bit = eval_model(str(final), None, None, None, "fp32", "saved", "torch")  # as trained: the NF4 base
    on_4bit[0].sentence_max_tokens = None
    on_its_4bit_base = eval_model(str(tiny_llama), "eol", None, None, "fp32", "nf4", "torch", adapter)
    assert linear_4bit_layers(on_its_4bit_base)
    assert np.abs(on_its_4bit_base.encode(SENTENCES[:4]) - on_4bit.encode(SENTENCES[:4])).max() < 1e-3

    out = tmp_path / "scores.json"
    args = ["eval", str(tiny_llama), "--template", "eol", "--adapter", str(adapter), "--data", str(shared_senteval)]
    code, output = run_cli([*args, "--output", str(out)], capsys)
    assert code == 0, output
    assert json.loads(out.read_text())["adapter"] == str(adapter)
    code, output = run_cli(["eval", str(tiny_llama), "--adapter", str(tiny_llama)], capsys)
    assert_one_line_error(code, output, "holds no LoRA adapter")
    code, output = run_cli(["export", str(tiny_llama), "--adapter-only", "--output", str(tmp_path / "x")], capsys)
    assert_one_line_error(code, output, "holds no LoRA adapter")
