"""Speed, measured side by side in one run: every number is a ratio against its peer, on a named CPU.

1. **Evaluation** (``eval``). The whole ``pcctune eval MODEL --tasks sts`` command against a script that runs
   sentence-transformers' ``EmbeddingSimilarityEvaluator`` over the same seven sets (STS12–16 as the concatenation of
   their subsets, STS-B and SICK-R test) on the same model: alternating, each in a fresh process, wall time of the
   whole process and its CPU time (user + sys, all threads); both print their seven numbers, which must agree to
   ±0.01. Each row also gives the evaluation's FLOPs per second as a fraction of the CPU's float32 peak, and per CPU
   second as a fraction of one core's (robust to other load; :func:`cpu` and :func:`eval_work` say what is counted).
2. **Training** (``train``). The demo's stage (``--train-config``: ``configs/demo_minilm.yaml``) as a whole
   ``pcctune train`` process, the same with ``loss: cosine_mse`` (sentence-transformers' ``CosineSimilarityLoss``
   inside pcctune), the same with every speed setting off, and the job as a plain sentence-transformers script
   (``_plain_st_train.py``, reading files this script writes beforehand from pcctune's data): alternating, each a
   fresh process; wall and CPU time and peak memory of the whole process, its parts (the training steps, the dev
   evaluations, the two test evaluations), the best dev and the test scores, the job's FLOPs (:func:`train_work`).
3. **Start-up** (``startup``). ``pcctune train --train-config`` to its first training step, in a fresh process with
   an empty cache, then again (the leakage checks and, with ``--score-base``, the base model's test scores cached):
   seconds from the process's start to the first step, and whether the two leakage reports are the same.
4. **Scale** (``scale``, for a GPU). What ``--scale-config``'s full run costs here (default: the paper's 7B recipe),
   from ``--steps`` steps of each stage on a decoder of a Hugging Face architecture (``--architecture`` as
   ``AutoConfig.for_model`` knows it, at its default shape, Mistral-7B's for ``mistral``, or ``--layers``,
   ``--hidden-size``, ``--heads``, ``--kv-heads``, ``--intermediate-size``) with random weights, a BPE tokenizer
   trained on the SentEval text and data of each stage's shape: nothing downloads. The stages run through pcctune's
   pipeline as the config (and ``--scale-set KEY=VALUE``) sets them, in this process, each step timed
   (``torch.cuda.synchronize`` on a GPU): the first (warm-up), the mean of the rest, real tokens per second, peak
   memory, the FLOP rate as a fraction of the GPU's dense bf16 peak (:data:`PEAKS`, ``--peak-tflops``; n/a on a CPU),
   and the full run's steps (epochs × its data's full batches) × the mean step (loading, evaluations, saves aside).
   FLOPs per real token: 2·N per pass through the N weights of the decoder's linear layers (embeddings aside): the
   forward, its recomputation under gradient checkpointing, GradCache's first pass without gradients, the input
   gradients, the weight gradients where the base trains (no adapter). LoRA's factors, NF4 dequantization,
   attention's products, norms and activations are not counted: the fraction is a floor.

    python benchmarks/speed.py --only eval --model all-MiniLM-L6-v2
    python benchmarks/speed.py --only train
    python benchmarks/speed.py --only startup      # the first training step, nothing cached, then cached
    python benchmarks/speed.py --only scale        # the 7B recipe at Mistral-7B's shape (--layers 8: a quarter)

Every record names its CPU (vendor, family, model and kernel flags, cores, clock, torch's CPU capability, the fp32
and bf16 peaks). To measure an AVX2-only CPU on a machine with more: ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
MKL_ENABLE_INSTRUCTIONS=AVX2``. Prints markdown tables and saves them (``table.md``) with every measurement
(``runs.json``); each measurement of parts 1–3 runs in a fresh process (this script again, with ``--one``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
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

from _common import STS_COLUMNS, Benchmark, Measured, Rows, cell, data_flag, parse, run, run_measured, save_rows
from pcctune.cpu_kind import this_cpu
from pcctune.evaluation.tables import ScoreTable
from pcctune.host_settings import SPEEDUPS_ENV, command_line, measured_kind, using
from pcctune.orchestration.base_scores import KIND as BASE_SCORES
from pcctune.paths import CACHE_ENV, cache_root

HERE = Path(__file__).resolve().parent
ST_LABEL = "sentence-transformers EmbeddingSimilarityEvaluator"


# --- the machine ------------------------------------------------------------------------------------


def cpu() -> dict[str, Any]:
    """The CPU (``pcctune.cpu_kind``: vendor, family, model, name, kernel flags), its physical cores and nominal clock
    (``lscpu``, else ``/proc/cpuinfo``), and its fp32 peak in GFLOP/s: cores × GHz × 2 FMA units × lanes × 2 FLOPs per
    FMA, lanes 16 where torch runs AVX-512 code (``torch.backends.cpu.get_cpu_capability()``), else 8, and 8 on the
    Zen 4 EPYC of ``MEASURED_KINDS`` (AVX-512 in two halves). Assumed: two FMA pipes per core (Intel since Haswell,
    AMD since Zen 2), the nominal clock (boost can pass 100 %), one thread per core. The bf16 peak: 1,024 FLOPs a
    cycle per core with AMX, twice the fp32 peak with AVX512_BF16 (two products per lane), none where it is emulated."""
    import torch

    kind, text = this_cpu(), subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}
    procinfo = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in Path("/proc/cpuinfo").open())}
    cores = int(fields.get("Core(s) per socket", 0)) * int(fields.get("Socket(s)", 0)) or os.cpu_count() or 1
    ghz = float(fields.get("CPU max MHz") or procinfo.get("cpu MHz") or 0) / 1000
    capability = torch.backends.cpu.get_cpu_capability()
    wide = capability.startswith("AVX512") and getattr(measured_kind(kind), "name", "") != "Zen 4 EPYC"
    fp32_peak = cores * ghz * 2 * (16 if wide else 8) * 2
    bf16_peak = 2 * fp32_peak if "avx512_bf16" in kind.flags else None
    bf16_peak = cores * ghz * 1024 if "amx_bf16" in kind.flags else bf16_peak
    machine = {"identity": kind.identity, "cores": cores, "ghz": ghz, "torch_capability": capability}
    machine |= {"torch_threads": torch.get_num_threads()}
    return machine | {"fp32_peak_gflops": fp32_peak, "bf16_peak_gflops": bf16_peak}


def cpu_line(machine: dict[str, Any]) -> str:
    return (
        f"CPU: {machine['identity']}; {machine['cores']} cores at {machine['ghz']:.2f} GHz (nominal), "
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
    from pcctune.modeling.prefix_cache import cached_prefix, prefix_ids

    model = build_model(args.model, template=args.template)
    texts = sorted({senteval_text(s) for t in _tasks(args) for p in t.pairs for s in (p.sentence1, p.sentence2)})
    prefix = len(prefix_ids(model)) if cached_prefix(model) is not None else 0
    tokens = sum(token_lengths(model, texts)) - prefix * (len(texts) - 1)
    weights = linear_weights(model)
    return {"distinct texts": len(texts), "tokens": tokens, "linear weights": weights, "flops": 2 * weights * tokens}


def linear_weights(model) -> int:
    """The weights of the model's linear layers (an unused pooler's aside): the FLOPs counts' 2 per weight per token."""
    import torch

    linears = [m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and "pooler" not in name]
    return sum(m.weight.numel() for m in linears)


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


def _tasks(args: argparse.Namespace):
    from pcctune.data.tasks import load_test_tasks
    from pcctune.paths import resolve_senteval_dir

    return load_test_tasks(resolve_senteval_dir(args.data))


def eval_commands(args: argparse.Namespace, out: Path) -> dict[str, list[str]]:
    """The two commands compared: ``pcctune eval`` and ST's evaluator."""
    template = ["--template", args.template] if args.template else []
    one = [str(HERE / "speed.py"), "--model", args.model, *template, *data_flag(args), "--one"]
    st_batch = ["--st-batch-size", str(args.st_batch_size)] if args.st_batch_size else []
    ours = ["-m", "pcctune.cli", "eval", args.model, "--tasks", "sts", "--output", str(out), *template]
    return {"pcctune eval": ours + data_flag(args), ST_LABEL: [*one[:-1], *st_batch, "--one", "st-evaluator"]}


def eval_rows(args: argparse.Namespace) -> Rows:
    """Alternate the two commands ``--repeats`` times; one row per command with its mean wall and CPU time and the
    evaluation's FLOPs (:func:`eval_work`) per second of each as a fraction of the CPU's (one core's) peak."""
    out = Path(tempfile.mkdtemp()) / "eval.json"
    commands, scores = eval_commands(args, out), {}
    ran: dict[str, list] = {label: [] for label in commands}
    for repeat in range(args.repeats):
        for label, command in commands.items():
            ran[label].append(done := run_measured(command))
            scores[label] = json.load(out.open())["sts"] if label == "pcctune eval" else json.loads(done.last)
            print(f"  {label}: {done.seconds:.1f} s, {done.cpu_s:.1f} s of CPU (repeat {repeat + 1})", flush=True)
    times = {label: [r.seconds for r in rs] for label, rs in ran.items()}
    cpu_times = {label: [r.cpu_s for r in rs] for label, rs in ran.items()}
    work = json.loads(run_measured([*commands[ST_LABEL][:-1], "eval-work"]).last)
    machine, mean = cpu(), {label: statistics.mean(s) for label, s in times.items()}
    mean_cpu, peak = {label: statistics.mean(s) for label, s in cpu_times.items()}, machine["fp32_peak_gflops"]
    setting = {"what": "eval", "model": args.model, "template": args.template, **work}
    return [
        setting
        | {"label": label, "st_batch_size": args.st_batch_size, "sts": scores[label]}
        | {"seconds": times[label], "mean_s": mean[label], "ratio_vs_st": mean[ST_LABEL] / mean[label]}
        | {"cpu_s": cpu_times[label], "mean_cpu_s": mean_cpu[label]}
        | {"peak_fraction": work["flops"] / 1e9 / mean[label] / peak}
        | {"core_peak_fraction": work["flops"] / 1e9 / mean_cpu[label] / (peak / machine["cores"])}
        for label in times
    ]


# --- 2. training: the demo's stage against a plain sentence-transformers script ----------------------

PLAIN = "plain sentence-transformers script (CosineSimilarityLoss)"
SETTINGS_OFF = "pcctune train, speed settings off"
ENVS = {SETTINGS_OFF: {SPEEDUPS_ENV: "0"}}  # and onednn: false (train_commands)


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
    settings = {key: getattr(stage, key) for key in (*keys, "logging_steps", "save_total_limit")}
    settings["seed"] = config.seed
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
    parts["best_dev"] = None if stage.best_dev_spearman is None else stage.best_dev_spearman * 100
    return parts | {"sts_before": result.sts_by_stage.get("before"), "sts_after": result.sts_by_stage[stage.stage]}


def train_rows(args: argparse.Namespace) -> Rows:
    """The three jobs alternating ``--repeats`` times, each a fresh process whose output folder is removed once
    read; one row per job (:func:`train_row`)."""
    work = Path(tempfile.mkdtemp(prefix="speed-train-"))
    given = {key: getattr(args, key) for key in ("model", "batch", "train_config", "data", "eval_steps", "max_steps")}
    one = [str(HERE / "speed.py"), *flags_of(given | {"work": work / "data"}), "--one", "train-prepare"]
    prepared = json.loads(run_measured(one).last)
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

    keys = ("seconds", "cpu_s", "peak_mb", "train_runtime_s", "dev_eval_s", "test_eval_s")
    row: dict[str, Any] = {"what": "train", **{key: prepared[key] for key in ("settings", "flops", "flops_by_part")}}
    row |= {key: [run[key] for run in runs] for key in (*keys, "best_dev")} | {f"mean_{k}": mean(k) for k in keys}
    row |= {"ratio_vs_plain": mean("seconds", plain) / mean("seconds")}
    row |= {"train_ratio_vs_plain": mean("train_runtime_s", plain) / mean("train_runtime_s")}
    gflops, bf16 = prepared["flops"] / 1e9 / mean("seconds"), machine["bf16_peak_gflops"]
    row |= {"peak_fraction": gflops / machine["fp32_peak_gflops"], "bf16_peak_fraction": bf16 and gflops / bf16}
    last = runs[-1]
    row |= {key: last[key] for key in ("steps", "dev_evaluations", "sts_before")} | {"dev": last["best_dev"]}
    return row | {"sts": last["sts_after"], "test_avgs": [run["sts_after"]["avg"] for run in runs]}


# --- 3. start-up: the cached leakage checks ----------------------------------------------------------

STARTS, NO_TESTS = ("first run (nothing cached)", "second run (cache hit)"), {"evaluate_before": False}


def startup_rows(args: argparse.Namespace) -> Rows:
    """``--repeats`` fresh cache folders, two ``--one startup`` processes in each (:data:`STARTS`); a row per kind
    with its seconds, and whether every pair of leakage reports is the same."""
    given = {key: getattr(args, key) for key in ("model", "batch", "train_config", "data")}
    given["score_base"], pairs = "1" if args.score_base else None, []
    for _ in range(args.repeats):
        work = Path(tempfile.mkdtemp(prefix="speed-startup-"))
        command = [str(HERE / "speed.py"), *flags_of(given | {"work": work / "run"}), "--one", "startup"]
        pairs.append([json.loads(run_measured(command, {CACHE_ENV: str(work / "cache")}).last) for _ in STARTS])
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


# --- 4. scale: a config's stages on any decoder's shape -------------------------------------------------

PEAKS = {"H100 PCIe": 756, "H100 NVL": 835, "H200 NVL": 835, "H100": 989, "H200": 989, "A100": 312}
"""Dense bf16 tensor-core TFLOP/s by GPU name (NVIDIA's datasheets: half the figures given with sparsity)."""
SHAPE = {"layers": "num_hidden_layers", "hidden_size": "hidden_size", "heads": "num_attention_heads"}
SHAPE |= {"kv_heads": "num_key_value_heads", "intermediate_size": "intermediate_size", "vocab_size": "vocab_size"}


def step_timer() -> Any:
    """A callback: the seconds and real tokens (forward passes that keep gradients) of each step, by stage."""
    import torch
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):  # a class of its own for each timer: its list is its own
        started, tokens, stages = 0.0, 0, list[list[tuple[float, int]]]()

        def count(self, module: Any, inputs: tuple) -> None:
            self.tokens += int(inputs[0]["attention_mask"].sum()) if torch.is_grad_enabled() else 0

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            self.stages.append([])
            model[0].register_forward_pre_hook(self.count)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started, self.tokens = self.now(), 0

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.stages[-1].append((self.now() - self.started, self.tokens))

        def now(self) -> float:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            return time.perf_counter()

    return StepTimer()


def random_decoder(args: argparse.Namespace, texts: list[str], folder: Path) -> tuple[int, dict[str, Any]]:
    """Save a decoder of ``--architecture`` with random bf16 weights and a BPE tokenizer trained on ``texts`` to
    ``folder``; return the weights of its linear layers and its shape."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import AutoConfig, AutoModel, PreTrainedTokenizerFast

    shape = {key: getattr(args, name) for name, key in SHAPE.items() if getattr(args, name) is not None}
    config = AutoConfig.for_model(args.architecture, **shape, bos_token_id=1, eos_token_id=1, pad_token_id=None)
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=config.vocab_size, special_tokens=["<unk>", "<s>"]))
    bpe.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", bos_token="<s>", eos_token="<s>")
    tokenizer.model_max_length = 512
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = AutoModel.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    shape = {key: getattr(config, key) for key in SHAPE.values()} | {"architecture": args.architecture}
    return linear_weights(model), shape


def stage_data(stage: Any, texts: list[str], folder: Path, rows: int, seed: int) -> dict[str, Any]:
    """``rows`` examples of the shape ``stage``'s loss reads, of distinct sentences of random words from ``texts`` at
    their lengths in words, written to ``folder``; the stage's ``data`` that reads them."""
    import numpy as np

    from pcctune.io import write_jsonl
    from pcctune.losses.registry import loss_spec

    rng, kind = np.random.default_rng(seed), loss_spec(stage.loss).data
    words, lengths = [w for t in texts for w in t.split()], [len(t.split()) for t in texts]
    sentences: dict[str, None] = {}
    while len(sentences) < rows * (3 if kind == "triplets" else 2):
        sentences[" ".join(rng.choice(words, size=rng.choice(lengths)))] = None
    it = iter(sentences)
    if kind == "triplets":
        path = folder / f"{stage.name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows([("sent0", "sent1", "hard_neg"), *zip(it, it, it, strict=False)])
        return {"source": "simcse_csv", "path": str(path)}
    scores = [5.0] * rows if kind == "positives" else rng.uniform(0, 5, rows).tolist()
    pairs = [{"sentence1": a, "sentence2": b, "score": s} for a, b, s in zip(it, it, scores, strict=False)]
    return {"source": "pairs", "path": str(write_jsonl(pairs, folder / f"{stage.name}.jsonl"))}


def passes(stage: Any, config: Any) -> int:
    """The passes of 2·N FLOPs a step makes per real token (the module docstring says which)."""
    from pcctune.training.batching import plan_batches

    plan = plan_batches(stage.batch_size, 1, stage.gradient_accumulation_steps, stage.mini_batch_size)
    grad_cache, base_trains = plan.mini_batch_size is not None, config.adapter.kind == "none"
    return 2 + stage.gradient_checkpointing + grad_cache + base_trains  # the forward and the input gradients: 2


def full_steps(stage: Any, config: Any, senteval: Path) -> int | None:
    """The steps of ``stage`` in the config's full run: ``max_steps``, else epochs × its data's full batches (SimCSE's
    NLI csv counted at its known size where it is not at hand); ``None`` where its data cannot be read."""
    from pcctune.data.nli_download import SIMCSE_NLI_FILE, SIMCSE_NLI_ROWS
    from pcctune.errors import PcctuneError
    from pcctune.training.datasets import train_dataset
    from pcctune.training.dev import holds_out

    if stage.max_steps > 0:
        return stage.max_steps
    try:
        examples = len(train_dataset(stage, senteval, None, config.seed, holds_out(stage, senteval)))
    except PcctuneError:
        if Path(stage.data.path or "").name != SIMCSE_NLI_FILE:
            return None
        examples = SIMCSE_NLI_ROWS
    return math.ceil(stage.epochs * (examples // stage.batch_size))


def scale_rows(args: argparse.Namespace) -> Rows:
    """``--scale-config``'s stages (with ``--scale-set``) on a random decoder, ``--steps`` each on data of their shape
    (:func:`stage_data`), no dev or test evaluation; a row per stage (:func:`stage_row`), the full run's hours."""
    import torch
    import yaml

    from pcctune.data.cache import senteval_folder
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import load_config

    work, senteval = Path(tempfile.mkdtemp(prefix="speed-scale-")), senteval_folder(args.data)
    texts = sorted({s for task in _tasks(args) for p in task.pairs for s in (p.sentence1, p.sentence2)})
    weights, shape = random_decoder(args, texts, work / "model")
    given = {key: yaml.safe_load(value) for key, _, value in (e.partition("=") for e in args.scale_set)}
    original = load_config(args.scale_config, given | {"data_dir": str(senteval)})
    overrides = given | {"model": str(work / "model"), "output_dir": str(work / "run"), "data_dir": str(senteval)}
    for i, stage in enumerate(original.stages):
        data = stage_data(stage, texts, work, stage.batch_size * args.steps, original.seed + i)
        timed = {"data": data, "max_steps": args.steps, "dev": "none", "eval_steps": args.steps + 1}
        overrides |= {f"stages.{i}.{key}": value for key, value in (timed | {"save_every_minutes": None}).items()}
    overrides |= {"evaluate_before": False, "evaluate_after_each_stage": False}
    timer, config = step_timer(), load_config(args.scale_config, overrides)
    result = run_pipeline(config, callbacks=[timer], tasks=[], overwrite=True)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    peak = args.peak_tflops or next((tflops for name, tflops in PEAKS.items() if gpu and name in gpu), None)
    setting = {"what": "scale", "config": args.scale_config.name, "shape": shape, "linear_weights": weights}
    setting |= {"device": f"cuda: {gpu}" if gpu else f"cpu: {this_cpu().identity}", "bf16_peak_tflops": peak}
    rows = [setting | {"flops_per_token_n": 2 * passes(stage, config)} for stage in config.stages]
    for row, stage, steps, record in zip(rows, original.stages, timer.stages, result.stages, strict=True):
        full = full_steps(stage, original, senteval)
        row |= stage_row(stage.name, steps, record, row["flops_per_token_n"] * weights, peak, full)
    hours = [row["projected_h"] for row in rows]
    return [*rows, setting | {"label": "full run (its steps)", "projected_h": None if None in hours else sum(hours)}]


def stage_row(name: str, steps: list, record: Any, per_token: int, peak: float | None, full: int | None) -> dict:
    """One stage's row: its steps' seconds and tokens, the mean after the first, peak memory, the FLOP rate, and the
    hours of its ``full`` run's steps."""
    timed = steps[1:] or steps
    mean_s, tokens = statistics.mean(s for s, _ in timed), statistics.mean(t for _, t in timed)
    tflops = per_token * tokens / mean_s / 1e12
    row = {"label": name, "seconds": [s for s, _ in steps], "tokens": [t for _, t in steps], "mean_s": mean_s}
    row |= {"first_s": steps[0][0], "tokens_per_s": tokens / mean_s, "tflops": tflops}
    row |= {"peak_gib": (record.peak_memory_mb or 0) / 1024, "memory_kind": record.memory_kind}
    row |= {"full_steps": full, "projected_h": None if full is None else full * mean_s / 3600}
    return row | {"bf16_peak_fraction": peak and tflops / peak}


# --- tables -------------------------------------------------------------------------------------------

Cells = dict[str, Callable[[dict], str | None]]
TABLES: dict[str, tuple[str, Cells]] = {  # --only part: first column, cells
    "eval": (
        "command",
        {"mean s": cell("mean_s", ".1f"), "× faster than ST": cell("ratio_vs_st", ".2f")}
        | {"mean CPU s (user + sys)": cell("mean_cpu_s", ".1f", 1, "—")}
        | {"% of fp32 peak": cell("peak_fraction", ".1f", 100, "—")}
        | {"% of a core's peak per CPU s": cell("core_peak_fraction", ".1f", 100, "—")}
        | {column: cell(column, ".4f") for column in STS_COLUMNS},
    ),
    "train": (
        "job",
        {"whole job s": cell("mean_seconds", ".1f"), "× faster than the plain script": cell("ratio_vs_plain", ".2f")}
        | {"training stage s": cell("mean_train_runtime_s", ".1f")}
        | {"× (training stage)": cell("train_ratio_vs_plain", ".2f")}
        | {"dev evaluations s": cell("mean_dev_eval_s", ".1f"), "test evaluations s": cell("mean_test_eval_s", ".1f")}
        | {"CPU s": cell("mean_cpu_s", ".1f"), "peak MB": cell("mean_peak_mb", ".0f")}
        | {"% of fp32 peak": cell("peak_fraction", ".1f", 100), "best dev": cell("dev", ".2f", 1, "—")}
        | {column: cell(column, ".2f") for column in STS_COLUMNS},
    ),
    "startup": (
        "run",
        {"first step after s": cell("mean_s", ".1f"), "sooner s": cell("sooner_s", ".1f")}
        | {"same leakage report": lambda row: "yes" if row["same_report"] else "no"},
    ),
    "scale": (
        "stage",
        {"first step s": cell("first_s", ".2f", 1, ""), "mean step s": cell("mean_s", ".2f", 1, "")}
        | {"tokens/s": cell("tokens_per_s", ",.0f", 1, ""), "peak GiB": cell("peak_gib", ".2f", 1, "")}
        | {"FLOPs per token (× N)": cell("flops_per_token_n", "d", 1, ""), "TFLOP/s": cell("tflops", ".3g", 1, "")}
        | {"% of bf16 peak": cell("bf16_peak_fraction", ".1f", 100, "n/a")}
        | {"full-run steps": cell("full_steps", ",d", 1, ""), "projected h": cell("projected_h", ".2f", 1, "?")},
    ),
}
PARTS = {"eval": eval_rows, "train": train_rows, "startup": startup_rows, "scale": scale_rows}


def table(rows: Rows, details: dict[str, Any]) -> str:
    tables = []
    for part, (first, cells) in TABLES.items():
        made = ScoreTable(part, list(cells), first_column=first)
        for row in (r for r in rows if r["what"] == part):
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
        f"{args.repeats} alternating repeats; command: python benchmarks/speed.py {' '.join(sys.argv[1:])}"
    )
    return Measured(rows, settings, {"cpu": machine})


ONE = {"st-evaluator": st_evaluator_scores, "eval-work": eval_work, "train-prepare": train_prepare}
ONE["startup"] = startup_seconds


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=list(PARTS), nargs="+", default=["eval"], help="default: eval")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--template", default=None)
    parser.add_argument("--st-batch-size", type=int, default=None, help="the ST evaluator's batch (its default: 16)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--train-config", type=Path, default=HERE.parent / "configs" / "demo_minilm.yaml")
    parser.add_argument("--eval-steps", type=int, default=None, help="train: steps between dev evaluations")
    parser.add_argument("--max-steps", type=int, default=None, help="train: stop after these steps")
    parser.add_argument("--one", choices=list(ONE), default=None, help="one measurement, printed as JSON (internal)")
    parser.add_argument("--work", default=None, help="train-prepare, startup: the folder their files go to (internal)")
    parser.add_argument("--score-base", nargs="?", const=True, default=False, help="startup: with the base's scores")
    parser.add_argument("--scale-config", type=Path, default=HERE.parent / "configs" / "paper_7b_qlora.yaml")
    parser.add_argument("--scale-set", nargs="*", default=[], help="scale: KEY=VALUE overrides of its config")
    parser.add_argument("--architecture", default="mistral", help="scale: a model type of transformers' AutoConfig")
    for name in SHAPE:
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=int, default=None, help="scale: else the architecture's"
        )
    parser.add_argument("--steps", type=int, default=4, help="scale: steps a stage (the first is a warm-up)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="scale: the GPU's dense bf16 peak (PEAKS)")


# --quick: every code path on tiny random models
QUICK = {"model": "{bert}", "repeats": 1, "batch": 2, "eval_steps": 1, "steps": 2, "vocab_size": 300}
QUICK |= {"layers": 2, "hidden_size": 64, "heads": 4, "kv_heads": 2, "intermediate_size": 128}
QUICK["scale_set"] = [f"stages.{i}.{key}={n}" for i in (0, 1) for key, n in (("batch_size", 8), ("mini_batch_size", 4))]
BENCHMARK = Benchmark.of(__name__, quick=QUICK)

if __name__ == "__main__":
    if "--one" in sys.argv:  # a single measurement in this fresh process; its JSON is the last line printed
        arguments_of_one = parse(BENCHMARK)
        with using(command_line()):  # as `pcctune` commands run
            print(json.dumps(ONE[arguments_of_one.one](arguments_of_one)))
    else:
        run(BENCHMARK)
