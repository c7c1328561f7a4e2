"""Every cache that stands in for a model's computation is keyed by what decides its result: change any input that
changes the result and the key changes (a miss); change nothing and it stays (a hit). The kinds: the base model's
test scores (``scores/before-KEY``), a run's kept test vectors (in its folder), ``pcctune eval``'s kept vectors
(``resume/eval-KEY``) and ``pcctune icl``'s kept dev scores (``resume/icl-KEY``)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from rich.console import Console
from safetensors.torch import load_file, save_file

from pcctune import provenance
from pcctune.cpu_kind import CPUKind
from pcctune.evaluation.protocols import PROTOCOLS, load_protocol_tasks
from pcctune.host_settings import SPEEDUPS, using
from pcctune.modeling import fingerprint
from pcctune.modeling.adapters import attach_adapter
from pcctune.orchestration.base_scores import before_key, tasks_digest
from pcctune.orchestration.evaluate import kept_vectors
from pcctune.orchestration.icl import kept_scores
from pcctune.orchestration.pipeline import Pipeline, load_base
from pcctune.paths import files_state
from pcctune.testing import write_tokenized_copy
from pcctune.training.config import AdapterConfig, RunConfig
from tests.conftest import hub_cache, one_step_stage2


@pytest.fixture
def case(tmp_path, tiny_bert, mini_senteval, monkeypatch):
    """A base model of the test's own (its files may be changed in place), the run config and test tasks."""
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    base = tmp_path / "base"
    shutil.copytree(tiny_bert, base)
    write_tokenized_copy(mini_senteval)  # the papers' protocol reads it
    config = RunConfig.model_validate(
        {
            "model": str(base),
            "data_dir": str(mini_senteval),
            "output_dir": str(tmp_path / "run"),
            "stages": [one_step_stage2()],
        }
    )
    return {"config": config, "senteval": mini_senteval, "tmp": tmp_path}


def key_of(kind: str, case: dict) -> str | None:
    """The key the cache ``kind`` gives the evaluation ``case`` describes, with its model loaded afresh."""
    config: RunConfig = case["config"]
    tasks = case.get("tasks") or load_protocol_tasks(case["senteval"], config.eval_protocol)
    model = load_base(config, quantized=False, head=False)
    if kind == "scores":
        return before_key(config, tasks, None, model)
    if kind == "run-vectors":
        return Pipeline(config, case["senteval"], Console(quiet=True), tasks=tasks).eval_key("stage1", model)
    settings = {"model": config.model, "protocol": config.eval_protocol, "data": tasks_digest(tasks)}
    if kind == "eval-vectors":
        with kept_vectors(case["tmp"] / "out.json", settings, model) as store:
            return None if store is None else store.key
    with kept_scores(case["tmp"] / "icl-out", settings, model) as kept:
        return None if kept is None else kept.key


def overwrite_weights(case: dict) -> None:
    """The base model's weights changed in place: same path, same file name."""
    weights = Path(case["config"].model) / "model.safetensors"
    tensors = load_file(weights)
    name = next(n for n in tensors if n.endswith("query.weight"))
    tensors[name] = tensors[name] + 0.5
    save_file(tensors, weights)


def edit_tokenizer(case: dict) -> None:
    """One word of the vocabulary renamed in ``tokenizer.json``."""
    path = Path(case["config"].model) / "tokenizer.json"
    saved = json.loads(path.read_text())
    vocab = saved["model"]["vocab"]
    vocab["dogz"] = vocab.pop("dog")
    path.write_text(json.dumps(saved))


def edit_test_file(case: dict) -> None:
    """One gold score of the STS-B test file changed."""
    tasks = load_protocol_tasks(case["senteval"], case["config"].eval_protocol)
    pair = tasks[0].subsets[0].pairs[0]
    tasks[0].subsets[0].pairs[0] = type(pair)(pair.sentence1, pair.sentence2, pair.score + 1.0)
    case["tasks"] = tasks


def edit_pcctune_source(case: dict, monkeypatch) -> None:
    """A copy of pcctune whose encoding (imported by every kind's computation) gained a line."""
    copy = case["tmp"] / "pcctune-src"
    shutil.copytree(provenance.PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    encoding = copy / "modeling" / "encoding.py"
    encoding.write_text(encoding.read_text() + "\n# a change to how sentences are encoded\n")
    monkeypatch.setattr(provenance, "PACKAGE_ROOT", copy)


def other_protocol(config: RunConfig) -> str:
    return next(name for name in PROTOCOLS if name != config.eval_protocol)


def set_config(**changes) -> Callable[[dict], None]:
    def change(case: dict) -> None:
        case["config"] = case["config"].model_copy(update=changes)

    return change


OTHER_CPU = CPUKind("AuthenticAMD", 26, 2, "AMD EPYC", frozenset({"avx2", "avx512f", "avx512_bf16"}))

CHANGES: dict[str, Callable] = {
    "weights changed in place": lambda case, mp: overwrite_weights(case),
    "tokenizer file": lambda case, mp: edit_tokenizer(case),
    "template": lambda case, mp: set_config(template="This sentence : {text}")(case),
    "pooling": lambda case, mp: set_config(pooling="cls")(case),
    "dtype": lambda case, mp: set_config(dtype="bf16")(case),
    "protocol": lambda case, mp: set_config(eval_protocol=other_protocol(case["config"]))(case),
    "test file": lambda case, mp: edit_test_file(case),
    "library version": lambda case, mp: mp.setattr(
        fingerprint, "library_versions", lambda: provenance.library_versions() | {"torch": "0.0.1"}
    ),
    "pcctune source": edit_pcctune_source,
    "CPU kind": lambda case, mp: mp.setattr(provenance, "this_cpu", lambda: OTHER_CPU),
    "float32 matmul precision": lambda case, mp: mp.setattr(torch, "get_float32_matmul_precision", lambda: "high"),
    "kernel precision variable": lambda case, mp: mp.setenv("ONEDNN_DEFAULT_FPMATH_MODE", "BF16"),
}
KINDS = ("scores", "run-vectors", "eval-vectors", "icl")


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_model_and_settings_give_the_same_key(kind, case):
    first = key_of(kind, case)
    assert first is not None and key_of(kind, case) == first


MODEL_CONTENT = ("weights changed in place", "tokenizer file")
"""Changes to a model's files. A run's own stage model is saved in the run folder, which keys its kept vectors by its
fingerprint: those vectors are removed whenever the stage trains again (tested below), not keyed by the weights."""


@pytest.mark.parametrize(
    ("kind", "change"),
    [(k, c) for k in KINDS for c in sorted(CHANGES) if not (k == "run-vectors" and c in MODEL_CONTENT)],
)
def test_any_input_that_changes_the_result_changes_the_key(kind, change, case, monkeypatch):
    before = key_of(kind, case)
    CHANGES[change](case, monkeypatch)
    assert key_of(kind, case) != before


@pytest.mark.parametrize("kind", KINDS)
def test_the_cpu_speed_settings_in_force_are_part_of_the_key(kind, case):
    plain = key_of(kind, case)
    with using(SPEEDUPS):
        assert key_of(kind, case) != plain


def test_an_adapter_whose_base_changed_in_place_gets_another_key(case):
    """A saved LoRA folder holds only the adapter; its base is read from ``base_model_name_or_path``: a base
    overwritten in place loads another model, and the key says so."""
    config: RunConfig = case["config"]
    model = load_base(config, quantized=False, head=False)
    attach_adapter(model, AdapterConfig(kind="lora", r=4, alpha=8))
    adapter = case["tmp"] / "adapter-run"
    model.save(str(adapter))
    loaded = case | {"config": config.model_copy(update={"model": str(adapter)})}
    before = key_of("scores", loaded)
    assert key_of("scores", loaded) == before
    overwrite_weights(case)  # the base, not the adapter folder
    assert key_of("scores", loaded) != before


def test_a_model_with_weights_not_loaded_keeps_no_cache(case):
    model = load_base(case["config"], quantized=False, head=False)
    with torch.device("meta"):
        model[0].auto_model.pooler = torch.nn.Linear(2, 2)
    assert fingerprint.model_digest(model) is None


def test_a_model_whose_weights_live_in_an_exported_graph_keeps_no_cache(case):
    """An ONNX or OpenVINO backbone holds its weights outside torch's tensors: what they are is not read, so no key."""
    model = load_base(case["config"], quantized=False, head=False)
    assert fingerprint.model_digest(model) is not None
    model[0].backend = "onnx"
    assert fingerprint.model_digest(model) is None


def test_the_code_digest_follows_what_a_module_imports_and_nothing_else(tmp_path):
    def changed_copy(name: str, module: str | None) -> Path:
        copy = tmp_path / name
        shutil.copytree(provenance.PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
        if module is not None:
            path = copy.joinpath(*module.split("/"))
            path.write_text(path.read_text() + "\n# changed\n")
        return copy

    def digest(copy: Path) -> str:
        return provenance.code_digest("pcctune.data.leakage", package_root=copy)

    before = digest(changed_copy("as-is", None))
    assert digest(changed_copy("unrelated", "losses/pearson.py")) == before  # the checks do not import the loss
    assert digest(changed_copy("imported", "data/sts.py")) != before  # they read the STS pairs through it
    assert digest(changed_copy("itself", "data/leakage.py")) != before
    edited = changed_copy("edited later", None)  # the same copy edited in place, as a reloaded module would be
    first = digest(edited)
    path = edited / "data" / "sts.py"
    path.write_text(path.read_text() + "\n# edited after the first digest\n")
    assert digest(edited) != first


def test_one_hub_id_held_by_two_caches_is_two_models(case, tiny_bert, tiny_mpnet, monkeypatch):
    """sentence-transformers loads a Hub id from ``SENTENCE_TRANSFORMERS_HOME`` where it is set, from the Hugging
    Face cache otherwise: the same id is then two models, and their scores are kept apart."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache(case["tmp"] / "hf", "org/tiny", tiny_bert, "a" * 40)))
    sentence_transformers_home = hub_cache(case["tmp"] / "st", "org/tiny", tiny_mpnet, "b" * 40)
    hub = case | {"config": case["config"].model_copy(update={"model": "org/tiny"})}
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    from_hub_cache = key_of("scores", hub)
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(sentence_transformers_home))
    assert key_of("scores", hub) != from_hub_cache


def test_adapters_that_differ_only_in_lora_alpha_get_other_keys(case):
    """LoRA scales its update by ``lora_alpha / r``: two adapters with the same tensors and another alpha give other
    embeddings, so their keys differ (``peft_config`` is part of the model's digest)."""
    config: RunConfig = case["config"]
    keys = []
    for alpha in (8, 64):
        model = load_base(config, quantized=False, head=False)
        attach_adapter(model, AdapterConfig(kind="lora", r=4, alpha=alpha))
        torch.manual_seed(0)
        for name, parameter in model.named_parameters():
            if "lora_" in name:
                torch.nn.init.normal_(parameter)  # the same tensors under either alpha, none of them zero
        keys.append(fingerprint.model_digest(model))
    assert None not in keys and keys[0] != keys[1]


def test_a_model_has_the_same_digest_before_and_after_it_encodes(case):
    """Encoding sets the tokenizer's truncation and padding for the batch: runtime state, not the model."""
    model = load_base(case["config"], quantized=False, head=False)
    before = fingerprint.model_digest(model)
    model.encode(["A man plays a guitar.", "A dog runs."])
    assert before is not None and fingerprint.model_digest(model) == before


def test_two_seeds_of_one_grid_share_one_base_score(case):
    """Scoring a base model draws nothing at random: a second seed of a grid reads the first one's base score."""
    first = key_of("scores", case)
    set_config(seed=case["config"].seed + 1)(case)
    assert first is not None and key_of("scores", case) == first


def test_a_model_on_the_cpu_of_a_gpu_host_keys_as_the_cpu_it_runs_on(case, monkeypatch):
    """The device in a key is the one the model computes on: a CPU computation on a host with a GPU shares its key
    with the same CPU computation elsewhere, not with the GPU's."""
    config: RunConfig = case["config"]
    tasks = load_protocol_tasks(case["senteval"], config.eval_protocol)
    model = load_base(config, quantized=False, head=False)
    on_cpu = before_key(config, tasks, None, model)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    assert before_key(config, tasks, None, model) == on_cpu
    assert fingerprint.computation_identity(torch.device("cuda"))["versions"]["device"] == "cuda: NVIDIA H100 80GB HBM3"


def test_an_edit_to_a_loss_leaves_the_base_scores_valid(case, monkeypatch):
    """A base score's key holds the code that scores (encoding, protocols, loading), not the whole package."""
    before = key_of("scores", case)
    copy = case["tmp"] / "pcctune-src"
    shutil.copytree(provenance.PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    loss = copy / "losses" / "pearson.py"
    loss.write_text(loss.read_text() + "\n# a change to a loss\n")
    monkeypatch.setattr(provenance, "PACKAGE_ROOT", copy)
    assert key_of("scores", case) == before


@pytest.mark.parametrize("kind", ["scores", "eval-vectors"])
def test_a_folder_named_with_or_without_dot_slash_keys_alike(kind, case, monkeypatch):
    """The model is keyed as loaded, not as named: a base score, and ``pcctune eval``'s kept vectors, are one."""
    monkeypatch.chdir(case["tmp"])
    set_config(model="./base")(case)
    dotted = key_of(kind, case)
    set_config(model="base")(case)
    assert dotted is not None and key_of(kind, case) == dotted


def test_pairs_that_differ_only_in_where_a_tab_falls_hash_apart():
    """Pairs are hashed one way, as JSON: a tab or line break inside a sentence cannot make two sets read alike."""
    from pcctune.data.pairs import pairs_sha256
    from pcctune.data.sts import STSPair, STSSubset, STSTask

    first, second = [STSPair("a\tb", "c", 1.0)], [STSPair("a", "b\tc", 1.0)]
    assert pairs_sha256(first) != pairs_sha256(second)
    assert pairs_sha256([STSPair("a", "b\n", 1.0)]) != pairs_sha256([STSPair("a", "b", 1.0), STSPair("", "", 1.0)])
    as_task = lambda pairs: [STSTask("mine", [STSSubset("mine", pairs)])]  # noqa: E731
    assert tasks_digest(as_task(first)) != tasks_digest(as_task(second))
    assert pairs_sha256(first, scores=False) == pairs_sha256([STSPair("a\tb", "c", 4.0)], scores=False)


def same_size_edit_with_its_time_restored(path: Path, old: str, new: str) -> None:
    """``path`` edited in place to text of the same size, its modification time set back as ``cp -p`` or ``tar``
    would: only its bytes and its change time tell."""
    assert len(old) == len(new)
    before = path.stat()
    path.write_text(path.read_text().replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def test_the_in_process_keys_see_a_same_size_edit_whose_time_was_set_back(tmp_path):
    pairs = tmp_path / "mine.csv"
    pairs.write_text("sentence1,sentence2,score\nA man plays.,A man sings.,4.0\n")
    state = files_state([tmp_path])
    same_size_edit_with_its_time_restored(pairs, "4.0", "1.0")
    assert files_state([tmp_path]) != state


def test_the_code_digest_sees_a_same_size_edit_whose_time_was_set_back(tmp_path):
    copy = tmp_path / "pcctune-src"
    shutil.copytree(provenance.PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = provenance.code_digest("pcctune.data.leakage", package_root=copy)
    same_size_edit_with_its_time_restored(copy / "data" / "leakage.py", "\n\n", "#\n")
    assert provenance.code_digest("pcctune.data.leakage", package_root=copy) != before


@pytest.fixture
def remembered(case, monkeypatch) -> list[Path]:
    """Every file's hash remembered (none counts as small), and the weight files read in full, in order."""
    from pcctune.modeling import weight_files

    monkeypatch.setattr(provenance, "SMALL_FILE", 0)
    reads: list[Path] = []

    def counted(path: Path) -> str:
        reads.append(Path(path))
        return provenance.file_sha256(path)

    monkeypatch.setattr(weight_files, "file_sha256", counted)
    return reads


def test_a_model_read_from_its_folder_is_keyed_by_its_files_hashes_remembered(case, remembered):
    first = key_of("scores", case)
    assert any(path.name == "model.safetensors" for path in remembered)
    remembered.clear()
    assert key_of("scores", case) == first and remembered == []  # warm: no file read again
    weights = Path(case["config"].model) / "model.safetensors"
    overwrite_weights(case)
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns - 10**9))
    assert key_of("scores", case) != first and weights.resolve() in remembered


def test_a_same_size_rewrite_of_the_weights_with_their_time_set_back_is_a_miss(case, remembered):
    weights = Path(case["config"].model) / "model.safetensors"
    first = key_of("scores", case)
    before = weights.stat()
    with weights.open("r+b") as handle:  # the last tensor's last bytes changed in place: same inode, same size
        handle.seek(-8, os.SEEK_END)
        changed = bytes(255 - byte for byte in handle.read(8))
        handle.seek(-8, os.SEEK_END)
        handle.write(changed)
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    now = weights.stat()
    assert (now.st_ino, now.st_size, now.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert key_of("scores", case) != first


def test_what_no_file_holds_is_read_from_the_model(case):
    """A new head's weights are in no file of the folder: two heads keep two keys though the files are the same."""
    from pcctune.modeling.pooler_head import add_mlp_head
    from pcctune.modeling.weight_files import model_folders

    folders = model_folders(case["config"].model)
    digests = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = add_mlp_head(load_base(case["config"], quantized=False, head=False))
        digests.append(fingerprint.model_digest(model, folders))
    assert None not in digests and digests[0] != digests[1]


def test_a_stage_evaluation_key_reads_no_weights_and_a_stage_trained_again_drops_its_vectors(case, monkeypatch):
    """A stage's test vectors wait in its run folder, keyed by the run's fingerprint: the key reads none of the
    stage model's weights, and training the stage again removes the vectors of the model it replaces."""
    config: RunConfig = case["config"]
    tasks = load_protocol_tasks(case["senteval"], config.eval_protocol)
    pipeline = Pipeline(config, case["senteval"], Console(quiet=True), tasks=tasks)
    model = load_base(config, quantized=False, head=False)

    def unread(*args, **kwargs):
        raise AssertionError("the stage's weights were read for its key")

    monkeypatch.setattr(fingerprint, "model_digest", unread)
    assert pipeline.eval_key("stage1", model) == pipeline.eval_key("stage1", model)
    kept = pipeline.store_path("stage1")
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(b"vectors of the model before")
    pipeline.forget("stage1")
    assert not kept.exists()


def test_a_model_read_from_its_folder_reads_none_of_its_tensors_for_its_key(case, monkeypatch):
    """Every tensor of a plain model read from its folder is one a safetensors file lists: none is hashed."""
    from pcctune.modeling.weight_files import model_folders

    model = load_base(case["config"], quantized=False, head=False)
    hashed: list[int] = []
    monkeypatch.setattr(fingerprint, "tensor_sha256", lambda tensor: hashed.append(tensor.numel()) or "read")
    assert fingerprint.model_digest(model, model_folders(case["config"].model)) is not None
    assert hashed == []
    assert fingerprint.model_digest(model) is not None and len(hashed) == len(model.state_dict())


def test_only_a_folder_the_model_is_read_from_stands_for_its_weights(case, monkeypatch):
    """A packaged name loads pcctune's packaged model even beside a folder of that name: that folder's files say
    nothing of its weights. A Hub id's snapshot cannot be told once loaded: its weights are read."""
    from pcctune.modeling.registry import PACKAGED_MODELS
    from pcctune.modeling.weight_files import model_folders

    monkeypatch.chdir(case["tmp"])
    packaged = next(iter(PACKAGED_MODELS))
    shutil.copytree(case["tmp"] / "base", case["tmp"] / packaged)
    assert model_folders(packaged) == [] and model_folders("org/tiny") == []
    assert model_folders("./base") == model_folders("base") == [(case["tmp"] / "base").resolve()]


def test_a_new_head_is_read_though_a_file_of_the_folder_holds_a_layer_of_its_name_and_shape(case):
    """A saved dense layer (``2_Dense``, ``linear.weight``) and a new head of the same shape share a tensor name:
    the new head's weights are read, so two draws of it keep two keys."""
    from pcctune.modeling.build import build_model
    from pcctune.modeling.pooler_head import add_mlp_head
    from pcctune.modeling.weight_files import model_folders

    saved = case["tmp"] / "with-dense"
    add_mlp_head(build_model(case["config"].model)).save(str(saved))
    digests = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = add_mlp_head(build_model(str(saved)))
        digests.append(fingerprint.model_digest(model, model_folders(str(saved))))
    assert None not in digests and digests[0] != digests[1]


def test_a_weight_the_load_draws_is_read_though_a_checkpoint_in_the_folder_lists_it(case):
    """The pooler's weights are missing from the folder's own file, so the load draws them; a checkpoint folder
    inside it lists them, but is not what the model was read from: the drawn weights are read for the key."""
    from pcctune.modeling.build import build_model
    from pcctune.modeling.weight_files import model_folders

    folder = Path(case["config"].model)
    weights = load_file(folder / "model.safetensors")
    (folder / "checkpoint-1").mkdir()
    save_file(weights, folder / "checkpoint-1" / "model.safetensors")
    save_file({n: t for n, t in weights.items() if "pooler" not in n}, folder / "model.safetensors")
    digests = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = build_model(str(folder))
        assert any("pooler" in name for name in model.state_dict())
        digests.append(fingerprint.model_digest(model, model_folders(str(folder))))
    assert None not in digests and digests[0] != digests[1]
