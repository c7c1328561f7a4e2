"""Speed, measured side by side in one run: every number is a ratio against its peer, on a named CPU.

1. **Evaluation** (``eval``). The whole ``pcctune eval MODEL --tasks sts`` command against a script that runs
   sentence-transformers' ``EmbeddingSimilarityEvaluator`` over the same seven sets (STS12–16 as the concatenation of
   their subsets, STS-B and SICK-R test) on the same model: alternating, each in a fresh process, wall time of the
   whole process and its CPU time (user + sys, all threads); both print their seven numbers, which must agree to
   ±0.01. Each row also gives the evaluation's FLOPs per second as a fraction of the CPU's float32 peak, and per CPU
   second as a fraction of one core's (robust to other load; :func:`cpu` and :func:`eval_work` say what is counted).
2. **Training step** (``steps``). A stage-2 Pearson step against a CoSENT step (sentence-transformers' own loss).
3. **Dev evaluation during training** (``dev-eval``). ST's ``EmbeddingSimilarityEvaluator`` against pcctune's
   ``DevSTSEvaluator``, on both filtered dev sets, alternating.
4. **Tokens** (``tokens``, not timed): the padded tokens each evaluation of (1) runs through the model.
5. **Kernels** (``kernels``). A training step of ``--loss`` with the linear layers by oneDNN (``onednn: true``, the
   default; QLoRA's 4-bit layers too) against torch's default CPU kernel, alternating, each in a fresh process.
6. **Training** (``train``). The demo's stage (``--train-config``: ``configs/demo_minilm.yaml``) as a whole
   ``pcctune train`` process, the same with ``loss: cosine_mse`` (sentence-transformers' ``CosineSimilarityLoss``
   inside pcctune), the same with every speed setting off, and the job as a plain sentence-transformers script
   (``_plain_st_train.py``, reading files this script writes beforehand from pcctune's data): alternating, each a
   fresh process; wall and CPU time and peak memory of the whole process, its parts (the training steps, the dev
   evaluations, the two test evaluations), the best dev and the test scores, the job's FLOPs (:func:`train_work`).
7. **A step against an earlier pcctune** (``decoder-step``). The ``train-step`` of ``--model`` by this checkout
   against the same by ``--baseline`` (a git revision), alternating: a GGUF decoder that no plain script loads is
   compared with pcctune's own step before a change.
8. **Start-up** (``startup``). ``pcctune train --train-config`` to its first training step, in a fresh process with
   an empty cache, then again (the leakage checks and, with ``--score-base``, the base model's test scores cached):
   seconds from the process's start to the first step, and whether the two leakage reports are the same.

    python benchmarks/speed.py --only eval --model all-MiniLM-L6-v2
    python benchmarks/speed.py --only eval --model smollm2-135m --template eol --sample 300  # a quick look
    python benchmarks/speed.py --only kernels --model smollm2-135m --template eol --qlora --batch 16 --steps 4
    python benchmarks/speed.py --only train
    python benchmarks/speed.py --only startup      # the first training step, nothing cached, then cached
    python benchmarks/speed.py --only decoder-step --model smollm2-135m --template eol --qlora --batch 16 --steps 4 \
        --baseline REV

Every record names its CPU (model, SIMD flags, cores, clock, torch's CPU capability, the fp32 and bf16 peaks). To
measure an AVX2-only CPU on a machine with more, limit the libraries: ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
MKL_ENABLE_INSTRUCTIONS=AVX2``. Prints markdown tables and saves them (``table.md``) with every measurement
(``runs.json``); each measurement runs in a fresh process (this script again, with ``--one``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import STS_COLUMNS, Benchmark, Measured, Rows, data_flag, parse, run, run_measured, run_python, save_rows
from pcctune.evaluation.tables import ScoreTable
from pcctune.host_settings import COMMAND_LINE, SPEEDUPS_ENV, using
from pcctune.orchestration.base_scores import KIND as BASE_SCORES
from pcctune.paths import CACHE_ENV, cache_root

HERE = Path(__file__).resolve().parent
ST_LABEL = "sentence-transformers EmbeddingSimilarityEvaluator"
SIMD = re.compile(r"^(avx2|fma|avx512\w*|amx\w*)$")


# --- the machine ------------------------------------------------------------------------------------


def cpu() -> dict[str, Any]:
    """The CPU as ``lscpu`` gives it (``/proc/cpuinfo`` where it has no value) and its float32 peak in GFLOP/s:
    physical cores × nominal GHz × 2 FMA units × lanes × 2 FLOPs per FMA, lanes 16 where torch runs AVX-512 code
    (``torch.backends.cpu.get_cpu_capability()``), else 8 (AVX2). Assumed: two FMA pipes per core (Intel since
    Haswell, AMD since Zen 2; Zen 4 runs AVX-512 on them in two halves, so its peak is the AVX2 one and this
    overstates it), the nominal clock (boost makes a fraction above 100 % possible), one thread per core. The bf16
    peak: 1,024 FLOPs a cycle per core with AMX (``amx_bf16``), twice the fp32 peak with AVX512_BF16
    (``vdpbf16ps``: two products per lane), none where bf16 is only emulated."""
    import torch

    text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}
    procinfo = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in Path("/proc/cpuinfo").open())}
    flags = (fields.get("Flags") or procinfo.get("flags", "")).split()
    cores = int(fields.get("Core(s) per socket", 0)) * int(fields.get("Socket(s)", 0)) or os.cpu_count() or 1
    ghz = float(fields.get("CPU max MHz") or procinfo.get("cpu MHz") or 0) / 1000
    capability = torch.backends.cpu.get_cpu_capability()
    lanes = 16 if capability.startswith("AVX512") else 8
    fp32_peak = cores * ghz * 2 * lanes * 2
    bf16_peak = cores * ghz * 1024 if "amx_bf16" in flags else 2 * fp32_peak if "avx512_bf16" in flags else None
    model = fields.get("Model name") or procinfo.get("model name", "unknown")
    machine = {"model": model, "simd_flags": [f for f in flags if SIMD.match(f)], "cores": cores, "ghz": ghz}
    machine |= {"torch_capability": capability, "torch_threads": torch.get_num_threads()}
    return machine | {"fp32_peak_gflops": fp32_peak, "bf16_peak_gflops": bf16_peak}


def cpu_line(machine: dict[str, Any]) -> str:
    flags = " ".join(machine["simd_flags"]) or "none of avx2/fma/avx512/amx"
    return (
        f"CPU: {machine['model']}, {machine['cores']} cores at {machine['ghz']:.2f} GHz (nominal), flags {flags}, "
        f"torch CPU capability {machine['torch_capability']}, {machine['torch_threads']} torch threads; "
        f"fp32 peak {machine['fp32_peak_gflops']:.0f} GFLOP/s (cores × GHz × 2 FMA units × lanes × 2), bf16 peak "
        + (f"{bf16:.0f} GFLOP/s" if (bf16 := machine.get("bf16_peak_gflops")) else "none (no AVX512_BF16 or AMX)")
    )


# --- 1. evaluation ---------------------------------------------------------------------------------


def eval_work(args: argparse.Namespace) -> dict:
    """The evaluation's work in FLOPs: 2 per weight of every linear layer (an unused pooler's aside) per token of
    each distinct sentence as the model sees it (template included; a prefix that pcctune runs once, once). Attention's
    products (4·n²·d per layer for a text of n tokens: under 1 % for these sentences), normalizations and
    activations are left out, so the fraction of peak is a floor."""
    from pcctune.evaluation.protocols import senteval_text
    from pcctune.modeling.build import build_model
    from pcctune.modeling.encoding import token_lengths

    model = build_model(args.model, template=args.template)
    texts = sorted({senteval_text(s) for t in _tasks(args) for p in t.pairs for s in (p.sentence1, p.sentence2)})
    prefix = _prefix_tokens(model)
    tokens = sum(token_lengths(model, texts)) - prefix * (len(texts) - 1)
    weights = linear_weights(model)
    return {"distinct texts": len(texts), "tokens": tokens, "linear weights": weights, "flops": 2 * weights * tokens}


def linear_weights(model) -> int:
    """The weights of the model's linear layers (an unused pooler's aside): the FLOPs counts' 2 per weight per token."""
    import torch

    linears = [m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and "pooler" not in name]
    return sum(m.weight.numel() for m in linears)


def _prefix_tokens(model) -> int:
    from pcctune.modeling.prefix_cache import cached_prefix, prefix_ids

    return len(prefix_ids(model)) if cached_prefix(model) is not None else 0


def st_evaluator_scores(args: argparse.Namespace) -> dict:
    """The peer: sentence-transformers' EmbeddingSimilarityEvaluator (its defaults, or ``--st-batch-size``) on each
    of the seven sets."""
    import numpy as np
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from pcctune.evaluation.protocols import senteval_text
    from pcctune.modeling.build import build_model

    model = build_model(args.model, template=args.template)
    scores = {}
    for task in _tasks(args):
        first, second = ([senteval_text(getattr(p, side)) for p in task.pairs] for side in ("sentence1", "sentence2"))
        gold = [p.score for p in task.pairs]
        batch = {"batch_size": args.st_batch_size} if args.st_batch_size else {}
        evaluator = EmbeddingSimilarityEvaluator(
            first, second, gold, main_similarity="cosine", name=task.name, write_csv=False, **batch
        )
        scores[task.name] = evaluator(model)[f"{task.name}_spearman_cosine"] * 100
    return scores | {"avg": float(np.mean(list(scores.values())))}


def pcctune_eval_scores(args: argparse.Namespace) -> dict:
    """pcctune's evaluation (used for --sample runs, where the CLI has no sampling flag)."""
    from pcctune.evaluation.sts import evaluate_sts
    from pcctune.modeling.build import build_model

    budget = {"token_budget": args.token_budget} if args.token_budget else {}
    model = build_model(args.model, template=args.template)
    scores, avg = evaluate_sts(model, _tasks(args), show_progress=False, **budget)
    return {s.name: s.spearman for s in scores} | {"avg": avg}


def _tasks(args: argparse.Namespace):
    from pcctune.data.tasks import load_test_tasks, subsample_task
    from pcctune.paths import resolve_senteval_dir

    tasks = load_test_tasks(resolve_senteval_dir(args.data))
    return [subsample_task(t, args.sample, seed=0) for t in tasks] if args.sample else tasks


def eval_commands(args: argparse.Namespace, out: Path) -> dict[str, list[str]]:
    """The two commands compared: ``pcctune eval`` (pcctune's own path with ``--sample``) and ST's evaluator."""
    template = ["--template", args.template] if args.template else []
    one = [str(HERE / "speed.py"), "--model", args.model, *template, *data_flag(args)]
    one += [*(["--sample", str(args.sample)] if args.sample else []), "--one"]
    st_batch = ["--st-batch-size", str(args.st_batch_size)] if args.st_batch_size else []
    if args.sample:
        ours = [*one, "pcctune-eval"]
    else:
        ours = ["-m", "pcctune.cli", "eval", args.model, "--tasks", "sts", "--output", str(out), *template]
        ours += data_flag(args)
    ours += ["--token-budget", str(args.token_budget)] if args.token_budget else []
    return {"pcctune eval": ours, ST_LABEL: [*one[:-1], *st_batch, "--one", "st-evaluator"]}


def eval_rows(args: argparse.Namespace) -> Rows:
    """Alternate the two commands ``--repeats`` times; one row per command with its mean wall and CPU time and the
    evaluation's FLOPs (:func:`eval_work`) per second of each as a fraction of the CPU's (one core's) peak."""
    out = Path(tempfile.mkdtemp()) / "eval.json"
    commands = eval_commands(args, out)
    times: dict[str, list[float]] = {label: [] for label in commands}
    cpu_times: dict[str, list[float]] = {label: [] for label in commands}
    scores = {}
    for repeat in range(args.repeats):
        for label, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            seconds, last = run_python(command)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[label].append(seconds)
            cpu_times[label].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            cli_record = label == "pcctune eval" and not args.sample
            scores[label] = json.load(out.open())["sts"] if cli_record else json.loads(last)
            print(f"  {label}: {seconds:.1f} s, {cpu_times[label][-1]:.1f} s of CPU (repeat {repeat + 1})", flush=True)
    work = json.loads(run_python([*commands[ST_LABEL][:-1], "eval-work"])[1])
    machine, mean = cpu(), {label: sum(s) / len(s) for label, s in times.items()}
    mean_cpu, peak = {label: sum(s) / len(s) for label, s in cpu_times.items()}, machine["fp32_peak_gflops"]
    setting = {"what": "eval", "model": args.model, "template": args.template, "sample": args.sample, **work}
    setting |= {"st_batch_size": args.st_batch_size}
    return [
        setting
        | {"label": label, "token_budget": args.token_budget if label == "pcctune eval" else None, "sts": scores[label]}
        | {"seconds": times[label], "mean_s": mean[label], "ratio_vs_st": mean[ST_LABEL] / mean[label]}
        | {"cpu_s": cpu_times[label], "mean_cpu_s": mean_cpu[label]}
        | {"peak_fraction": work["flops"] / 1e9 / mean[label] / peak}
        | {"core_peak_fraction": work["flops"] / 1e9 / mean_cpu[label] / (peak / machine["cores"])}
        for label in times
    ]


# --- 2. training step and 5. kernels ------------------------------------------------------------------


def train_step_seconds(args: argparse.Namespace) -> dict:
    """Seconds per step of ``--loss`` in the trainer (the first step, a warm-up, not counted) and peak memory."""
    from pcctune.modeling.adapters import AdapterConfig
    from pcctune.orchestration.pipeline import load_for_training
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.config import RunConfig, StageConfig
    from pcctune.training.stage import run_stage

    stage = {"name": args.loss, "loss": args.loss, "data": {"source": "stage2", "rescale_sick": True}, "dev": "none"}
    stage |= {"batch_size": args.batch, "max_steps": args.steps, "logging_steps": 1, "eval_steps": args.steps}
    config = StageConfig.model_validate(stage | {"learning_rate": 2e-5})
    adapter = AdapterConfig(kind="qlora", r=64, alpha=16) if args.qlora else AdapterConfig()
    onednn = args.onednn == "on"
    run_config = RunConfig(
        model=args.model, template=args.template, adapter=adapter, onednn=onednn, seed=1, stages=[config]
    )
    model = load_for_training(run_config, None)
    work = Path(tempfile.mkdtemp()) / args.loss
    result = run_stage(model, config, run_config, work, resolve_senteval_dir(args.data))
    stamps = [entry["train_runtime"] for entry in result.log_history if "train_runtime" in entry]
    timing = {"seconds_per_step": stamps[-1] / args.steps, "peak_mb": result.cost.peak_memory_mb}
    return {"loss": args.loss, **timing, "steps": args.steps, "batch": args.batch}


KERNELS = {"on": "oneDNN (onednn: true)", "off": "torch's default (onednn: false)"}


def step_rows(
    args: argparse.Namespace, variants: dict[str, list[str]], what: str, peer: str, homes: dict[str, Path] | None = None
) -> Rows:
    """Each variant's ``--one train-step`` measurements, one fresh process each, the variants alternating within
    every repeat so that a drift in the machine's speed falls on all alike; each row's time over ``peer``'s
    (``train-step``) or its speed-up over ``peer`` (``kernels``, ``decoder-step``). A variant in ``homes`` runs the
    ``speed.py`` and ``src`` of another checkout."""
    flags = ["--steps", str(args.steps), "--batch", str(args.batch), "--model", args.model, *data_flag(args)]
    flags += [*(["--template", args.template] if args.template else []), *(["--qlora"] if args.qlora else [])]
    measured: dict[str, list[dict]] = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for name, extra in variants.items():
            home = (homes or {}).get(name)
            env = {"PYTHONPATH": str(home / "src")} if home else None
            _, last = run_python(
                [str((home or HERE.parent) / "benchmarks" / "speed.py"), *flags, *extra, "--one", "train-step"], env
            )
            measured[name].append(json.loads(last))
            print(f"  {name}: {measured[name][-1]['seconds_per_step']:.3f} s/step (repeat {repeat + 1})", flush=True)
    mean = {name: sum(m["seconds_per_step"] for m in ms) / len(ms) for name, ms in measured.items()}

    def versus(name: str) -> dict[str, float]:
        steps = what == "train-step"
        return {"ratio_vs_cosent": mean[name] / mean[peer]} if steps else {"speedup": mean[peer] / mean[name]}

    return [
        {"label": name, "what": what, "mean_s": mean[name], "batch": args.batch, **versus(name)}
        | {"seconds_per_step": [m["seconds_per_step"] for m in ms], "peak_mb": max(m["peak_mb"] for m in ms)}
        for name, ms in measured.items()
    ]


def loss_rows(args: argparse.Namespace) -> Rows:
    """A Pearson step against a CoSENT step, the model's linear layers as a run sets them."""
    return step_rows(
        args, {f"{loss} step": ["--loss", loss] for loss in ("pearson", "cosent")}, "train-step", "cosent step"
    )


def kernel_rows(args: argparse.Namespace) -> Rows:
    """``--loss`` steps with the linear layers by oneDNN against torch's default kernel."""
    setting = f"{args.loss} step, {args.model}{', QLoRA' if args.qlora else ''}, batch {args.batch}: "
    variants = {setting + label: ["--loss", args.loss, "--onednn", kernel] for kernel, label in KERNELS.items()}
    return step_rows(args, variants, "kernels", setting + KERNELS["off"])


def decoder_rows(args: argparse.Namespace) -> Rows:
    """``--loss`` steps by this checkout against the same by ``--baseline``: another checkout's folder, or a git
    revision (its ``src`` and ``benchmarks``, exported by ``git archive``)."""
    if not args.baseline:
        raise SystemExit("error: decoder-step compares with an earlier pcctune: give --baseline REV (a git revision)")
    home = Path(args.baseline)
    if not home.is_dir():
        home = Path(tempfile.mkdtemp(prefix="speed-baseline-"))
        archive = subprocess.run(
            ["git", "archive", args.baseline, "src", "benchmarks"], cwd=HERE.parent, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(home)], input=archive.stdout, check=True)
    setting = f"{args.loss} step, {args.model}{', QLoRA' if args.qlora else ''}, batch {args.batch}: "
    variants = {setting + label: ["--loss", args.loss] for label in ("this checkout", f"pcctune {args.baseline}")}
    before = setting + f"pcctune {args.baseline}"
    return step_rows(args, variants, "decoder-step", before, {before: home})


# --- 6. training: the demo's stage against a plain sentence-transformers script ----------------------

PLAIN = "plain sentence-transformers script (CosineSimilarityLoss)"
SETTINGS_OFF = "pcctune train, speed settings off"
ENVS = {SETTINGS_OFF: {SPEEDUPS_ENV: "0"}}  # and onednn: false (train_commands)
PARTS_OF_JOB = ("train_runtime_s", "dev_eval_s", "test_eval_s")


def flags_of(values: dict[str, Any]) -> list[str]:
    """``--key value`` for each value given (``None``: left to the program's default)."""
    return [flag for key, v in values.items() if v is not None for flag in (f"--{key.replace('_', '-')}", str(v))]


def train_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--set`` overrides of ``--train-config``: the model and batch, the dev interval and steps when given."""
    stage = {"batch_size": args.batch, "eval_steps": args.eval_steps, "max_steps": args.max_steps}
    return {"model": args.model} | {f"stages.0.{key}": v for key, v in stage.items() if v is not None}


def train_prepare(args: argparse.Namespace) -> dict:
    """Write what the plain script reads (into ``--work``) from the pairs ``pcctune train`` trains, selects and
    tests on: the stage's training set, its dev sets, the seven test sets as SentEval reads them."""
    from dataclasses import asdict

    from pcctune.data.cache import senteval_folder
    from pcctune.evaluation.protocols import load_protocol_tasks, senteval_text
    from pcctune.io import write_json, write_jsonl
    from pcctune.modeling.build import resolve_source
    from pcctune.training.config import load_config
    from pcctune.training.datasets import train_dataset
    from pcctune.training.dev import holds_out, stage_dev_parts

    config = load_config(args.train_config, train_overrides(args) | ({"data_dir": args.data} if args.data else {}))
    stage, senteval, work = config.stages[0], senteval_folder(config.data_dir), Path(args.work)
    train = train_dataset(stage, senteval, None, config.seed, holds_out(stage, senteval)).to_list()
    dev, tests = stage_dev_parts(stage, senteval), load_protocol_tasks(senteval, config.eval_protocol)
    write_jsonl(train, work / "train.jsonl")
    texts: dict[str, list[str]] = {"dev": [], "test": []}
    for folder, sets, text in (("dev", dev, str), ("test", {t.name: t.pairs for t in tests}, senteval_text)):
        for name, pairs in sets.items():
            rows = [{**asdict(p), "sentence1": text(p.sentence1), "sentence2": text(p.sentence2)} for p in pairs]
            texts[folder] += [row[side] for row in rows for side in ("sentence1", "sentence2")]
            write_jsonl(rows, work / folder / f"{name}.jsonl")
    write_json({"dev": list(dev), "test": [task.name for task in tests]}, work / "sets.json")
    keys = ("batch_size", "learning_rate", "warmup_ratio", "epochs", "max_steps", "max_seq_length", "eval_steps")
    settings = {key: getattr(stage, key) for key in (*keys, "logging_steps", "save_total_limit")} | {
        "seed": config.seed
    }
    return {"model_path": resolve_source(config.model).path, "settings": settings} | train_work(config, train, texts)


def train_work(config: Any, train: list[dict], texts: dict[str, list[str]]) -> dict:
    """The job's FLOPs by part, counted as :func:`eval_work` counts: 2 per linear weight per token of each distinct
    dev text at every dev evaluation and of each distinct test text at each test evaluation; 6 per training token
    (the forward pass, and the backward's input and weight gradients) of the pairs the steps draw (the training
    set's tokens, cut at the stage's ``max_seq_length``, × the share of it the steps draw)."""
    from pcctune.modeling.build import build_model
    from pcctune.modeling.encoding import token_lengths

    model, stage = build_model(config.model, template=config.template), config.stages[0]
    cap = stage.max_seq_length or model.max_seq_length or sys.maxsize
    weights = linear_weights(model)

    def tokens(sentences: list[str]) -> int:
        return sum(min(n, cap) for n in token_lengths(model, sentences))

    steps = stage.max_steps if stage.max_steps > 0 else int(stage.epochs * (len(train) // stage.batch_size))
    drawn = steps * stage.batch_size / len(train)
    flops = {"train steps": 6 * weights * drawn * tokens([r[c] for r in train for c in ("sentence1", "sentence2")])}
    flops["dev evaluations"] = 2 * weights * tokens(sorted(set(texts["dev"]))) * (steps // stage.eval_steps)
    flops["test evaluations"] = 2 * weights * tokens(sorted(set(texts["test"]))) * (1 + config.evaluate_before)
    counts = {"steps": steps, "train_pairs": len(train), "linear weights": weights}
    return counts | {"flops_by_part": flops, "flops": sum(flops.values())}


def train_commands(args: argparse.Namespace, work: Path, prepared: dict) -> dict[str, list[str]]:
    """The four jobs, each completed by its output folder: ``pcctune train`` of ``--train-config``, the same with
    ``loss: cosine_mse``, the same with every speed setting off (:data:`SETTINGS_OFF`), and the plain script with
    the stage's settings (its evaluator at ``--st-batch-size``)."""
    ours = ["-m", "pcctune.cli", "train", str(args.train_config), *data_flag(args)]
    ours += [flag for key, value in train_overrides(args).items() for flag in ("--set", f"{key}={value}")]
    plain = [str(HERE / "_plain_st_train.py"), "--model", prepared["model_path"], "--data", str(work)]
    plain += flags_of(prepared["settings"] | {"eval_batch_size": args.st_batch_size or 64})
    cosine, off = [*ours, "--set", "stages.0.loss=cosine_mse"], [*ours, "--set", "onednn=false"]
    return {"pcctune train": ours, "pcctune train, loss cosine_mse": cosine, SETTINGS_OFF: off} | {PLAIN: plain}


def pcctune_parts(out: Path) -> dict:
    """What a ``pcctune train`` run folder records of the job's parts: the trainer's ``train_runtime`` and
    ``eval_runtime`` (its log), the test evaluations' seconds, the steps, the best dev and the test scores."""
    from pcctune.results import RunResult

    result = RunResult.from_disk(out / "results.json")
    stage = result.stages[-1]
    history = json.loads((Path(stage.final_dir).parent / "log_history.json").read_text(encoding="utf-8"))
    evaluations = [row["eval_runtime"] for row in history if "eval_runtime" in row]
    parts = {"train_runtime_s": next(row["train_runtime"] for row in history if "train_runtime" in row)}
    parts |= {"dev_eval_s": sum(evaluations), "test_eval_s": sum(result.eval_wall_time_s.values())}
    parts |= {"steps": max(row.get("step", 0) for row in history), "dev_evaluations": len(evaluations)}
    best = None if stage.best_dev_spearman is None else stage.best_dev_spearman * 100
    return (
        parts
        | {"best_dev": best, "sts_before": result.sts_by_stage.get("before")}
        | {"sts_after": result.sts_by_stage[stage.stage]}
    )


def train_rows(args: argparse.Namespace) -> Rows:
    """The three jobs alternating ``--repeats`` times, each a fresh process whose output folder is removed once
    read; one row per job (:func:`train_row`)."""
    work = Path(tempfile.mkdtemp(prefix="speed-train-"))
    given = {key: getattr(args, key) for key in ("model", "batch", "train_config", "data", "eval_steps", "max_steps")}
    one = [str(HERE / "speed.py"), *flags_of(given | {"work": work / "data"}), "--one", "train-prepare"]
    prepared = json.loads(run_python(one)[1])
    commands, machine = train_commands(args, work / "data", prepared), cpu()
    runs: dict[str, list[dict]] = {label: [] for label in commands}
    for repeat in range(args.repeats):
        for number, (label, command) in enumerate(commands.items()):
            out = work / f"run-{repeat}-{number}"
            ran = run_measured([*command, "--output" if label == PLAIN else "--output-dir", str(out)], ENVS.get(label))
            parts = json.loads(ran.last) if label == PLAIN else pcctune_parts(out)
            runs[label].append({"seconds": ran.seconds, "cpu_s": ran.cpu_s, "peak_mb": ran.peak_mb} | parts)
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(cache_root() / BASE_SCORES, ignore_errors=True)  # every job scores its base model itself
            print(f"  {label}: {ran.seconds:.1f} s, {ran.cpu_s:.1f} CPU s, {ran.peak_mb:.0f} MB", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    env = {label: [f"{k}={v}" for k, v in ENVS.get(label, {}).items()] for label in commands}
    shown = {label: shlex.join([*env[label], "python", *command]) for label, command in commands.items()}
    return [
        train_row(runs[label], runs[PLAIN], prepared, machine) | {"label": label, "command": shown[label]}
        for label in runs
    ]


def train_row(runs: list[dict], plain: list[dict], prepared: dict, machine: dict[str, Any]) -> dict:
    """One job's row: every repeat's measurements and their means, the plain script's means over these (the whole
    process; the trainer's ``train_runtime``: the steps and the dev evaluations), the job's FLOPs per second as a
    fraction of the CPU's fp32 and bf16 peaks, the best dev and the test scores of the last repeat (every repeat's
    test average in ``test_avgs``)."""

    def mean(key: str, of: list[dict] = runs) -> float:
        return sum(run[key] for run in of) / len(of)

    keys = ("seconds", "cpu_s", "peak_mb", *PARTS_OF_JOB)
    row: dict[str, Any] = {"what": "train", **{key: prepared[key] for key in ("settings", "flops", "flops_by_part")}}
    row |= {key: [run[key] for run in runs] for key in (*keys, "best_dev")} | {f"mean_{k}": mean(k) for k in keys}
    row |= {"ratio_vs_plain": mean("seconds", plain) / mean("seconds")}
    row |= {"train_ratio_vs_plain": mean("train_runtime_s", plain) / mean("train_runtime_s")}
    gflops, bf16 = prepared["flops"] / 1e9 / mean("seconds"), machine["bf16_peak_gflops"]
    row |= {"peak_fraction": gflops / machine["fp32_peak_gflops"], "bf16_peak_fraction": bf16 and gflops / bf16}
    last = runs[-1]
    row |= {key: last[key] for key in ("steps", "dev_evaluations", "sts_before")} | {"dev": last["best_dev"]}
    return row | {"sts": last["sts_after"], "test_avgs": [run["sts_after"]["avg"] for run in runs]}


# --- 8. start-up: the cached leakage checks ----------------------------------------------------------

STARTS, NO_TESTS = ("first run (nothing cached)", "second run (cache hit)"), {"evaluate_before": False}


def startup_rows(args: argparse.Namespace) -> Rows:
    """``--repeats`` fresh cache folders, two ``--one startup`` processes in each (:data:`STARTS`); a row per kind
    with its seconds, and whether every pair of leakage reports is the same."""
    given = {key: getattr(args, key) for key in ("model", "batch", "train_config", "data")}
    given["score_base"], pairs = "1" if args.score_base else None, []
    for _ in range(args.repeats):
        work = Path(tempfile.mkdtemp(prefix="speed-startup-"))
        command = [str(HERE / "speed.py"), *flags_of(given | {"work": work / "run"}), "--one", "startup"]
        pairs.append([json.loads(run_python(command, env={CACHE_ENV: str(work / "cache")})[1]) for _ in STARTS])
        shutil.rmtree(work, ignore_errors=True)
    seconds = [[pair[kind]["first_step_s"] for pair in pairs] for kind in range(len(STARTS))]
    same = all(first["leakage"] == second["leakage"] for first, second in pairs)
    return [
        {"label": label, "what": "startup", "seconds": kept, "mean_s": statistics.mean(kept), "same_report": same}
        | {"sooner_s": statistics.mean(seconds[0]) - statistics.mean(kept), "leakage": pairs[-1][kind]["leakage"]}
        for kind, (label, kept) in enumerate(zip(STARTS, seconds, strict=True))
    ]


def startup_seconds(args: argparse.Namespace) -> dict:
    """(``--one``) Seconds from this process's start to the first training step of ``--train-config`` (output in
    ``--work``; no test evaluation unless ``--score-base``: the base model's, as the config asks; the run stops at that
    step), and its stage-2 set's leakage report."""
    import psutil
    from transformers import TrainerCallback

    from pcctune.data.cache import senteval_folder
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import load_config
    from pcctune.training.datasets import stage2_set

    class FirstStep(TrainerCallback, BaseException):  # raises itself to stop the run: no Ctrl-C is taken for it
        seconds: float | None = None

        def on_step_begin(self, arguments: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.seconds = time.time() - psutil.Process().create_time()
            raise self  # nothing after the first step is measured

    overrides = train_overrides(args) | {"output_dir": str(args.work)} | ({} if args.score_base else NO_TESTS)
    first = FirstStep()
    config = load_config(args.train_config, overrides | ({"data_dir": args.data} if args.data else {}))
    with contextlib.suppress(FirstStep):
        run_pipeline(config, callbacks=[first], tasks=None if args.score_base else [], overwrite=True)
    built = stage2_set(config.stages[0].data, senteval_folder(config.data_dir))
    return {"first_step_s": first.seconds, "leakage": built.report_dict()}


# --- 3. dev evaluation --------------------------------------------------------------------------------


def dev_eval_rows(args: argparse.Namespace) -> Rows:
    """ST's evaluator (what a stage ran before) against ``DevSTSEvaluator``, best of alternating calls."""
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from pcctune.data.dev import SINGLE_DEV_SETS, dev_parts
    from pcctune.modeling.build import build_model
    from pcctune.paths import resolve_senteval_dir
    from pcctune.training.dev import DevSTSEvaluator

    model, senteval, rows = build_model(args.model), resolve_senteval_dir(args.data), []
    for dev_set in SINGLE_DEV_SETS:
        pairs = [pair for part in dev_parts(dev_set, senteval).values() for pair in part]
        first, second, gold = [p.sentence1 for p in pairs], [p.sentence2 for p in pairs], [p.score for p in pairs]
        before = EmbeddingSimilarityEvaluator(
            first, second, gold, batch_size=64, main_similarity="cosine", name=dev_set, write_csv=False
        )
        evaluators = {
            "EmbeddingSimilarityEvaluator (before)": before,
            "DevSTSEvaluator (now)": DevSTSEvaluator({dev_set: pairs}, dev_set),
        }
        seconds: dict[str, list[float]] = {label: [] for label in evaluators}
        scores = {}
        for _ in range(args.repeats * 2):
            for label, evaluator in evaluators.items():
                started = time.perf_counter()
                scores[label] = evaluator(model)[f"{dev_set}_spearman_cosine"] * 100
                seconds[label].append(time.perf_counter() - started)
        for label in evaluators:
            best, reference = min(seconds[label]), min(seconds["EmbeddingSimilarityEvaluator (before)"])
            rows.append(
                {"label": f"{dev_set}: {label}", "what": "dev-eval", "seconds": seconds[label], "best_s": best}
                | {"ratio_vs_before": reference / best, "spearman": scores[label], "pairs": len(pairs)}
            )
            print(f"  {dev_set} {label}: {best:.2f} s, Spearman {scores[label]:.4f}", flush=True)
    return rows


# --- 4. tokens run through the model ------------------------------------------------------------------


def token_rows(args: argparse.Namespace) -> Rows:
    """The padded tokens each evaluation runs through the model (no timing): ST's evaluator encodes each side of
    each task in batches of 16 by character length; pcctune each distinct text once by token length within the
    token budget, a decoder's template prefix once. Their ratio bounds the speed-up that fewer tokens can give."""
    import numpy as np

    from pcctune.evaluation.protocols import senteval_text
    from pcctune.modeling.build import build_model
    from pcctune.modeling.encoding import default_token_budget, length_batches, token_lengths

    model = build_model(args.model, template=args.template)
    sides = [[senteval_text(getattr(p, s)) for p in t.pairs] for t in _tasks(args) for s in ("sentence1", "sentence2")]
    st_tokens = 0
    for texts in sides:
        lengths = np.array(token_lengths(model, texts))[np.argsort([-len(t) for t in texts], kind="stable")]
        st_tokens += sum(int(lengths[i : i + 16].max()) * len(lengths[i : i + 16]) for i in range(0, len(texts), 16))
    unique = sorted({t for texts in sides for t in texts})
    lengths, budget = token_lengths(model, unique), args.token_budget or default_token_budget(model)
    prefix = _prefix_tokens(model)
    ours = sum((lengths[b[0]] - prefix) * len(b) for b in length_batches(lengths, budget))
    counts = {"texts": sum(map(len, sides)), "distinct": len(unique), "prefix tokens": prefix}
    return [
        {"label": "ST evaluator", "what": "tokens", "tokens": st_tokens, **counts},
        {"label": f"pcctune (budget {budget})", "what": "tokens", "tokens": ours, "ratio": st_tokens / ours, **counts},
    ]


# --- tables -------------------------------------------------------------------------------------------


def cell(key: str, spec: str, scale: float = 1, missing: str | None = None) -> Callable[[dict], str | None]:
    """A table cell: the row's ``key`` × ``scale`` formatted by ``spec`` (``missing`` where the row has none)."""
    return lambda row: missing if row.get(key) is None else format(row[key] * scale, spec)


TABLES: dict[str, tuple[str, dict[str, Callable[[dict], str | None]]]] = {  # --only part: first column, cells
    "eval": (
        "command",
        {"mean s": cell("mean_s", ".1f"), "× faster than ST": cell("ratio_vs_st", ".2f")}
        | {"mean CPU s (user + sys)": cell("mean_cpu_s", ".1f", 1, "—")}
        | {"% of fp32 peak": cell("peak_fraction", ".1f", 100, "—")}
        | {"% of a core's peak per CPU s": cell("core_peak_fraction", ".1f", 100, "—")}
        | {column: cell(column, ".4f") for column in STS_COLUMNS},
    ),
    "steps": ("step", {"s/step": cell("mean_s", ".3f"), "× CoSENT": cell("ratio_vs_cosent", ".3f")}),
    "dev-eval": (
        "evaluator",
        {"pairs": cell("pairs", "d"), "best s": cell("best_s", ".2f"), "× faster": cell("ratio_vs_before", ".2f")}
        | {"Spearman × 100": cell("spearman", ".4f")},
    ),
    "tokens": (
        "path",
        {"texts": cell("texts", ",d"), "distinct": cell("distinct", ",d"), "padded tokens run": cell("tokens", ",d")}
        | {"ST tokens / these": cell("ratio", ".3f", 1, "1")},
    ),
    "kernels": (
        "step",
        {"s/step": cell("mean_s", ".3f"), "× torch's default": cell("speedup", ".2f")}
        | {"peak MB": cell("peak_mb", ".0f", 1, "—")},
    ),
}
TABLES["decoder-step"] = ("step", {"s/step": cell("mean_s", ".3f"), "× the earlier pcctune": cell("speedup", ".2f")})
TABLES["decoder-step"][1]["peak MB"] = cell("peak_mb", ".0f", 1, "—")
TABLES["startup"] = ("run", {"first step after s": cell("mean_s", ".1f"), "sooner s": cell("sooner_s", ".1f")})
TABLES["startup"][1]["same leakage report"] = lambda row: "yes" if row["same_report"] else "no"
TABLES["train"] = (
    "job",
    {"whole job s": cell("mean_seconds", ".1f"), "× faster than the plain script": cell("ratio_vs_plain", ".2f")}
    | {
        "training stage s": cell("mean_train_runtime_s", ".1f"),
        "× (training stage)": cell("train_ratio_vs_plain", ".2f"),
    }
    | {"dev evaluations s": cell("mean_dev_eval_s", ".1f"), "test evaluations s": cell("mean_test_eval_s", ".1f")}
    | {"CPU s": cell("mean_cpu_s", ".1f"), "peak MB": cell("mean_peak_mb", ".0f")}
    | {"% of fp32 peak": cell("peak_fraction", ".1f", 100), "best dev": cell("dev", ".2f", 1, "—")}
    | {column: cell(column, ".2f") for column in STS_COLUMNS},
)
PARTS = {"eval": eval_rows, "steps": loss_rows, "dev-eval": dev_eval_rows}
PARTS |= {"tokens": token_rows, "kernels": kernel_rows, "train": train_rows, "decoder-step": decoder_rows}
PARTS["startup"] = startup_rows
WHAT = {"steps": "train-step"}  # a part's rows' ``what`` where it is not the part's name


def table(rows: Rows, details: dict[str, Any]) -> str:
    tables = []
    for part, (first, cells) in TABLES.items():
        made = ScoreTable(part, list(cells), first_column=first)
        for row in (r for r in rows if r["what"] == WHAT.get(part, part)):
            flat = row | row.get("sts", {})
            label = f"{row['label']} ({row['model']})" if part == "eval" else row["label"]
            made.rows.append((label, {column: make(flat) for column, make in cells.items()}))
        tables.append(made)
    return "\n\n".join(t.to_markdown() for t in tables if t.rows)  # the settings below it name the CPU


def measure(args: argparse.Namespace) -> Measured:
    machine, rows = cpu(), []
    for part in args.only:
        print(f"{part}:", flush=True)
        rows += PARTS[part](args)
        save_rows(args.output, "speed", rows, "label")
    settings = (
        f"{cpu_line(machine)}; model {args.model}{', template ' + args.template if args.template else ''}; "
        f"{'sample of ' + str(args.sample) + ' pairs per task' if args.sample else 'full test sets'}; "
        f"{args.repeats} alternating repeats; command: python benchmarks/speed.py {' '.join(sys.argv[1:])}"
    )
    return Measured(rows, settings, {"cpu": machine})


ONE = {"st-evaluator": st_evaluator_scores, "pcctune-eval": pcctune_eval_scores, "eval-work": eval_work}
ONE |= {"train-step": train_step_seconds, "train-prepare": train_prepare, "startup": startup_seconds}


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=list(PARTS), nargs="+", default=list(PARTS)[:5], help="default: parts 1–5")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--template", default=None)
    parser.add_argument("--sample", type=int, default=None, help="pairs per task (a seeded sample) for a quick run")
    parser.add_argument("--token-budget", type=int, default=None, help="pcctune's padded tokens per batch (eval)")
    parser.add_argument("--st-batch-size", type=int, default=None, help="the ST evaluator's batch (its default: 16)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--loss", default="pearson")
    parser.add_argument("--qlora", action="store_true", help="train steps on an NF4 base with LoRA r = 64 (QLoRA)")
    parser.add_argument("--onednn", choices=list(KERNELS), default="on", help="linear layers' kernel of a train step")
    parser.add_argument("--train-config", type=Path, default=HERE.parent / "configs" / "demo_minilm.yaml")
    parser.add_argument("--eval-steps", type=int, default=None, help="train: steps between dev evaluations")
    parser.add_argument("--max-steps", type=int, default=None, help="train: stop after these steps")
    parser.add_argument("--baseline", default=None, help="decoder-step: the git revision of the earlier pcctune")
    parser.add_argument("--one", choices=list(ONE), default=None, help="one measurement, printed as JSON (internal)")
    parser.add_argument("--work", default=None, help="train-prepare, startup: the folder their files go to (internal)")
    parser.add_argument("--score-base", nargs="?", const=True, default=False, help="startup: with the base's scores")


# --quick: every code path on tiny random models
QUICK = {"model": "{bert}", "repeats": 1, "steps": 2, "batch": 2, "eval_steps": 1, "baseline": str(HERE.parent)}
BENCHMARK = Benchmark.of(__name__, quick=QUICK)

if __name__ == "__main__":
    if "--one" in sys.argv:  # a single measurement in this fresh process; its JSON is the last line printed
        arguments_of_one = parse(BENCHMARK)
        with using(COMMAND_LINE):  # as `pcctune` commands run
            print(json.dumps(ONE[arguments_of_one.one](arguments_of_one)))
    else:
        run(BENCHMARK)
