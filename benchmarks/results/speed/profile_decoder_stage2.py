"""Where a decoder stage-2 step spends its time: the recipe's stage 2 (``configs/paper_recipe_smollm2_cpu.yaml``,
SmolLM2-135M, QLoRA NF4 r = 64 on every linear layer, PromptEOL, last token, batch 64, GradCache mini-batches of 16)
with one loss, for a few steps on the stage-2 set filtered at ``pair``, through pcctune's own pipeline.

Each step is timed (the first is warm-up, the profiled one aside), its real tokens counted and its FLOP rate given as
a share of the CPU's fp32 peak (:func:`flop_rate`); one step (``--profile-step``) runs under ``torch.profiler`` and its
self CPU time is split into parts by operator name (:data:`PARTS`): the matrix products, NF4 dequantization,
dropout, attention, the optimizer, and the rest. Adapter and stage keys can be changed (``--set KEY=VALUE``, as
``pcctune train --set``) to measure one change against the recipe in the same way. The model starts from the base
(the stage-1 adapter has the same shapes, so a step costs the same). Prints one JSON line per run.

    python benchmarks/results/speed/profile_decoder_stage2.py --loss pearson --steps 4
    python benchmarks/results/speed/profile_decoder_stage2.py --loss pearson --steps 4 --set adapter.dropout=0
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RECIPE = HERE.parents[2] / "configs" / "paper_recipe_smollm2_cpu.yaml"
PARTS = {
    "matmul": (
        "mkldnn::_linear_pointwise",
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::addmv",
        "aten::mv",
        "aten::dot",
    ),
    "dequantize": ("bitsandbytes", "dequant", "4bit", "nf4"),
    "dropout": ("dropout", "bernoulli", "geometric"),
    "attention": ("scaled_dot_product", "flash_attention", "_efficient_attention", "softmax"),
    "optimizer": ("optimizer", "adamw", "_foreach", "zero_grad"),
}
"""Each part's operator-name fragments (matched in order, lower-cased; an operator matching none is ``other``)."""


def part_of(name: str) -> str:
    lowered = name.lower()
    for part, fragments in PARTS.items():
        if any(fragment.lower() in lowered for fragment in fragments):
            return part
    return "other"


def profiler_callback(step: int, found: dict[str, Any]) -> Any:
    """A trainer callback that profiles step ``step`` (1-based) and puts each part's self CPU seconds, and the top
    operators, into ``found``."""
    import torch
    from transformers import TrainerCallback

    class Profile(TrainerCallback):
        profiler: Any = None

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step + 1 == step:
                self.profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                self.profiler.__enter__()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.profiler is None or state.global_step != step:
                return
            self.profiler.__exit__(None, None, None)
            events = [e for e in self.profiler.key_averages() if e.self_cpu_time_total > 0]
            parts: dict[str, float] = {}
            for event in events:
                part = part_of(event.key)
                parts[part] = parts.get(part, 0.0) + event.self_cpu_time_total / 1e6
            top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:25]
            found["parts_s"] = dict(sorted(parts.items(), key=lambda item: -item[1]))
            found["top_ops"] = [[e.key, round(e.self_cpu_time_total / 1e6, 3), e.count] for e in top]
            self.profiler = None

    return Profile()


def step_timer(found: dict[str, Any]) -> Any:
    """A trainer callback: the wall and CPU seconds of each step and its real tokens (the attention masks' sum of the
    passes with gradients) into ``found["steps"]``, and the model's linear weights (``found["weights"]``: the frozen
    base's and LoRA's, each ``in × out``)."""
    import torch
    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        started, tokens = (0.0, 0.0), 0

        def count(self, module: Any, inputs: tuple) -> None:
            self.tokens += int(inputs[0]["attention_mask"].sum()) if torch.is_grad_enabled() else 0

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            model[0].register_forward_pre_hook(self.count)
            weights = {"base": 0, "lora": 0}
            for name, module in model.named_modules():
                if isinstance(module, torch.nn.Linear):
                    weights["lora" if "lora_" in name else "base"] += module.in_features * module.out_features
            found["weights"] = weights

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started, self.tokens = (time.perf_counter(), time.process_time()), 0

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            wall, cpu = time.perf_counter() - self.started[0], time.process_time() - self.started[1]
            found.setdefault("steps", []).append([round(wall, 3), round(cpu, 3), self.tokens])

    return Timer()


def flop_rate(found: dict[str, Any], timed: list[list[float]]) -> dict[str, float]:
    """The timed steps' FLOPs a second and their share of the fp32 peak (``benchmarks/speed.py``'s ``cpu``): per real
    token 6 FLOPs a frozen base weight (GradCache's forward without gradients, the forward again, the input
    gradient) and 8 a LoRA weight (and its weight gradient). Attention's products, norms and activations are not
    counted: the share is a floor."""
    sys.path.insert(0, str(HERE.parents[1]))
    from speed import cpu

    per_token = 6 * found["weights"]["base"] + 8 * found["weights"]["lora"]
    rate = statistics.mean(per_token * tokens / wall for wall, _, tokens in timed) / 1e9
    peak = cpu()["fp32_peak_gflops"]
    return {"gflops": round(rate, 1), "fp32_peak_gflops": round(peak, 1), "share_of_peak": round(rate / peak, 3)}


def parallel_summary(lines: Path) -> str:
    """A markdown table of ``run_decoder_stage2_parallel.sh``'s lines: per round, the steps a second of one process
    on both cores and of two processes at once (one thread each, their rates summed), and their ratio."""
    runs = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    ones = [run for run in runs if run["label"].startswith("1 process")]
    twos = [run for run in runs if run["label"].startswith("2 processes")]
    if len(twos) != 2 * len(ones) or any(run["mean_step_s"] is None for run in runs):
        raise SystemExit(f"{lines}: {len(ones)} one-process and {len(twos)} two-process runs with a time; want 1:2")
    rows = ["| round | 1 process × 2 threads | 2 processes × 1 thread | ratio |", "| --- | --- | --- | --- |"]
    for k, one in enumerate(ones):
        single = 1 / one["mean_step_s"]
        both = sum(1 / run["mean_step_s"] for run in twos[2 * k : 2 * k + 2])
        rows.append(f"| {k + 1} | {single:.4f} steps/s | {both:.4f} steps/s | {both / single:.2f} |")
    return "\n".join(rows + ["", f"CPU: {runs[0]['cpu']}"])


def summary(lines: Path) -> str:
    """A markdown table of the runs in ``lines`` (one JSON line each): by loss and label, each run's mean step, the
    mean over runs, the FLOP rate's share of the fp32 peak and the profiled step's parts as shares of their sum."""
    runs = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    header = ["loss", "label", "s a step (each run)", "mean", "× before", "share of fp32 peak", *PARTS, "other"]
    rows = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    means: dict[tuple[str, str], float] = {}
    for key in dict.fromkeys((run["loss"], run["label"]) for run in runs):
        group = [run for run in runs if (run["loss"], run["label"]) == key]
        means[key] = statistics.mean(run["mean_step_s"] for run in group)
        before = means.get((key[0], "BEFORE"), means[key])
        parts = {
            part: statistics.mean(run["parts_s"].get(part, 0) / sum(run["parts_s"].values()) for run in group)
            for part in [*PARTS, "other"]
        }
        share = statistics.mean(run["share_of_peak"] for run in group)
        cells = [*key, ", ".join(f"{run['mean_step_s']:.2f}" for run in group), f"{means[key]:.2f}"]
        cells += [f"{before / means[key]:.2f}", f"{100 * share:.0f} %", *(f"{100 * v:.0f} %" for v in parts.values())]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows + ["", f"CPU: {runs[0]['cpu']}; torch threads {runs[0]['torch_threads']}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loss", default="pearson", choices=["pearson", "cosine_mse", "cosent"])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--profile-step", type=int, default=3, help="1-based; 0: none")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE, as pcctune --set")
    parser.add_argument("--data", default=os.environ.get("PCCTUNE_DATA", str(HERE.parents[3] / "shared" / "data")))
    parser.add_argument("--label", default="", help="a name for the run's line (e.g. before, after)")
    parser.add_argument("--summarize", type=Path, default=None, help="a file of this script's lines: their table")
    parser.add_argument("--parallel", type=Path, default=None, help="run_decoder_stage2_parallel.sh's lines: a table")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads, as the runner's --jobs")
    args = parser.parse_args()
    if args.summarize is not None:
        print(summary(args.summarize))
        return
    if args.parallel is not None:
        print(parallel_summary(args.parallel))
        return

    import torch
    import yaml

    if args.threads is not None:
        torch.set_num_threads(args.threads)

    from pcctune.cpu_kind import this_cpu
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.training.config import load_config

    out = Path(tempfile.mkdtemp(prefix="profile-decoder-"))
    stage = 1  # the recipe's stage 2, alone
    given = {key: yaml.safe_load(value) for key, _, value in (item.partition("=") for item in args.overrides)}
    recipe = load_config(RECIPE, {"data_dir": args.data})
    stage2 = recipe.stages[stage].model_dump(mode="json", exclude_unset=True)
    stage2 |= {"loss": args.loss, "name": args.loss, "max_steps": args.steps, "dev": "none"}
    stage2 |= {"eval_steps": args.steps + 1, "save_every_minutes": None, "data": stage2["data"] | {"leakage": "pair"}}
    stage2.pop("init", None)
    overrides = {"stages": [stage2], "output_dir": str(out), "data_dir": args.data, "evaluate_before": False}
    overrides |= {"evaluate_after_each_stage": False} | given
    config = load_config(RECIPE, overrides)
    found: dict[str, Any] = {"label": args.label, "loss": args.loss, "set": given, "cpu": this_cpu().identity}
    found |= {"torch_threads": torch.get_num_threads(), "steps_asked": args.steps}
    started = time.perf_counter()
    callbacks = [step_timer(found)] + ([profiler_callback(args.profile_step, found)] if args.profile_step else [])
    run_pipeline(config, callbacks=callbacks, tasks=[], overwrite=True)
    found["process_s"] = round(time.perf_counter() - started, 1)
    found["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    timed = [step for k, step in enumerate(found["steps"]) if k + 1 not in (1, args.profile_step)]
    found["mean_step_s"] = round(statistics.mean(wall for wall, *_ in timed), 3) if timed else None
    found |= flop_rate(found, timed) if timed else {}
    print(json.dumps(found), file=sys.stdout, flush=True)


if __name__ == "__main__":
    main()
