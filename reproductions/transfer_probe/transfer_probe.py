"""Transfer tasks as SentEval scores them : pcctune's two probes against SentEval itself.

For each model, every transfer task's sentences are encoded once; the same vectors are probed by
``pcctune eval --tasks transfer --probe sklearn`` (scikit-learn's logistic regression) and ``--probe senteval``
(SentEval's PyTorch probe, :mod:`pcctune.evaluation.senteval_probe`). With ``--reference PATH`` (a checkout of
facebookresearch/SentEval; not on PyPI) SentEval's own engine scores the task too: its loaders, its
``InnerKFoldClassifier`` / ``KFoldClassifier`` / ``SplitClassifier``, ``usepytorch``, ``kfold: 10`` and the
classifier settings of the papers (Adam, batch 64, tenacity 5, epoch size 4), its batcher reading the vectors
pcctune encoded (a sentence not among them is encoded by the model and counted). SentEval's classifier calls
``.cuda()`` unconditionally; here that call is the identity, so it runs on the CPU unchanged otherwise.
One row per (model, probe, task), saved as it lands; ``--resume`` runs only the missing ones.

    git clone https://github.com/facebookresearch/SentEval /tmp/SentEval        # commit 5d6dc11
    OMP_NUM_THREADS=1 python -m reproductions transfer_probe --rerun -- --reference /tmp/SentEval
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from reproductions._common import Measured, Rows, claim, load_rows, save_rows

from pcctune.data.transfer import TRANSFER_TASKS, load_transfer_task
from pcctune.evaluation.transfer import PROBES, score_transfer_task, transfer_sentences
from pcctune.modeling.build import build_model
from pcctune.modeling.encoding import encode_unique
from pcctune.paths import resolve_senteval_dir
from pcctune.testing import TinyWorkspace, write_mini_transfer

REFERENCE = "SentEval itself"
CLASSIFIER = {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4}  # the papers' params


def _senteval(repo: Path) -> Any:
    """SentEval's engine from a checkout, its classifier kept on the CPU (``.cuda()`` made the identity), on
    today's Python (``inspect.getargspec``, removed in 3.11, is ``getfullargspec``: the same argument names)."""
    import inspect

    import torch

    inspect.getargspec = inspect.getfullargspec  # type: ignore[attr-defined]

    sys.path.insert(0, str(repo))
    import senteval.engine
    from senteval.tools import classifier

    torch.Tensor.cuda = lambda self, *args, **kwargs: self  # type: ignore[method-assign]
    torch.nn.Module.cuda = lambda self, *args, **kwargs: self  # type: ignore[method-assign]
    build = classifier.PyTorchClassifier.__init__

    def on_cpu(self, *args, **kwargs) -> None:  # cudaEfficient only picks the device of prepare_split
        build(self, *args, **kwargs)
        self.cudaEfficient = True

    classifier.PyTorchClassifier.__init__ = on_cpu
    return senteval.engine


def reference_score(engine: Any, senteval_dir: Path, task: str, model, vectors: dict[str, np.ndarray]) -> dict:
    """One task through SentEval's own engine; its batcher joins SentEval's tokens as the papers' batchers do."""
    encoded_apart: list[str] = []

    def batcher(params, batch: list[list[str]]) -> np.ndarray:
        texts = [" ".join(tokens) for tokens in batch]
        missing = sorted({t for t in texts if t not in vectors})
        if missing:
            vectors.update(zip(missing, model.encode(missing), strict=True))
            encoded_apart.extend(missing)
        return np.stack([vectors[t] for t in texts])

    params = {"task_path": str(senteval_dir), "usepytorch": True, "kfold": 10, "seed": 1111, "classifier": CLASSIFIER}
    result = engine.SE(params, batcher).eval(task)
    return {"accuracy": float(result["acc"]), "f1": result.get("f1"), "encoded_apart": len(encoded_apart)}


def _label(model: str, probe: str, task: str) -> str:
    return f"{model} | {probe} | {task}"


def measure(args: argparse.Namespace) -> Measured:
    senteval_dir = resolve_senteval_dir(args.data)
    rows: Rows = load_rows(args.output / "runs.json")[0] if args.resume else []
    done = {row["label"] for row in rows}
    probes = [*args.probes, *([REFERENCE] if args.reference else [])]
    engine = _senteval(args.reference) if args.reference else None
    for name in args.models:
        model = build_model(name)
        for task_name in args.tasks:
            todo = [probe for probe in probes if _label(name, probe, task_name) not in done]
            if not todo:
                continue
            task = load_transfer_task(senteval_dir, task_name)
            vectors = encode_unique(model, transfer_sentences(task), show_progress=False)
            for probe in todo:
                started = time.perf_counter()
                if probe == REFERENCE:
                    scored = reference_score(engine, senteval_dir, task_name, model, vectors)
                else:
                    score = score_transfer_task(task, vectors, probe=probe)
                    scored = {"accuracy": score.accuracy, "f1": score.f1}
                row = {"label": _label(name, probe, task_name), "model": name, "probe": probe, "task": task_name}
                rows.append(row | scored | {"seconds": time.perf_counter() - started})
                print(f"{row['label']}: {scored['accuracy']:.2f} ({rows[-1]['seconds']:.0f} s)", flush=True)
                save_rows(args.output, "transfer_probe", rows, "label")
    return Measured(rows, described(rows))


def described(rows: Rows) -> str:
    """What the record holds (a resumed run may add models or probes): each model's probes."""
    probes = {
        model: [r["probe"] for r in rows if r["model"] == model] for model in dict.fromkeys(r["model"] for r in rows)
    }
    held = "; ".join(f"{model}: {', '.join(dict.fromkeys(names))}" for model, names in probes.items())
    return f"{held}; test accuracy (MRPC: accuracy / F1); SentEval's classifier settings: {CLASSIFIER}, kfold 10"


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "—"
    return f"{row['accuracy']:.2f}" + (f" / {row['f1']:.2f}" if row.get("f1") is not None else "")


def table(rows: Rows, details: dict[str, Any]) -> str:
    """One line per (model, probe): the seven tasks and their average; then pcctune's senteval probe minus
    SentEval's own, per task, where both ran."""
    tasks = [t for t in TRANSFER_TASKS if any(r["task"] == t for r in rows)]
    found = {(r["model"], r["probe"], r["task"]): r for r in rows}
    lines = ["| model | probe | " + " | ".join(tasks) + " | avg |", "|" + " --- |" * (len(tasks) + 3)]
    pairs = dict.fromkeys((r["model"], r["probe"]) for r in rows)
    for model, probe in pairs:
        mine = [found.get((model, probe, t)) for t in tasks]
        accuracies = [r["accuracy"] for r in mine if r is not None]
        avg = f"{np.mean(accuracies):.2f}" if len(accuracies) == len(tasks) else "—"
        lines.append(f"| {model} | {probe} | " + " | ".join(_cell(r) for r in mine) + f" | {avg} |")
    for model in dict.fromkeys(m for m, _ in pairs):
        ours, theirs = ([found.get((model, p, t)) for t in tasks] for p in ("senteval", REFERENCE))
        if any(a and b for a, b in zip(ours, theirs, strict=True)):
            gaps = [
                f"{round(a['accuracy'] - b['accuracy'], 2) + 0.0:+.2f}" if a and b else "—"
                for a, b in zip(ours, theirs, strict=True)
            ]
            lines.append(f"| {model} | senteval − {REFERENCE} | " + " | ".join(gaps) + " | |")
    return "\n".join(lines)


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """Per task: pcctune's senteval probe minus SentEval's own accuracy, with a ±0.5 band."""
    from pcctune.plotting import save_figure, subplots

    found = {(r["model"], r["probe"], r["task"]): r["accuracy"] for r in rows}
    models = [m for m in dict.fromkeys(r["model"] for r in rows) if (m, REFERENCE) in {(k[0], k[1]) for k in found}]
    if not models:
        return
    figure, ax = subplots(figsize=(7, 3.5))
    width = 0.8 / len(models)
    for i, model in enumerate(models):
        tasks = [t for t in TRANSFER_TASKS if (model, "senteval", t) in found and (model, REFERENCE, t) in found]
        gaps = [found[(model, "senteval", t)] - found[(model, REFERENCE, t)] for t in tasks]
        ax.bar([TRANSFER_TASKS.index(t) + i * width for t in tasks], gaps, width, label=model)
    ax.axhspan(-0.5, 0.5, color="grey", alpha=0.2, label="±0.5")
    ax.set_xticks(range(len(TRANSFER_TASKS)), TRANSFER_TASKS)
    ax.set(ylabel="accuracy gap (points)", title="pcctune --probe senteval minus SentEval itself")
    ax.legend()
    save_figure(figure, path)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", nargs="+", default=["all-MiniLM-L6-v2"])
    parser.add_argument("--probes", nargs="+", default=list(PROBES), choices=PROBES)
    parser.add_argument("--tasks", nargs="+", default=list(TRANSFER_TASKS), choices=TRANSFER_TASKS)
    parser.add_argument("--reference", type=Path, default=None, help="a SentEval checkout: score with it too")
    parser.add_argument("--resume", action="store_true", help="keep the rows already in OUTPUT/runs.json")


def prepare_quick(args: argparse.Namespace, tiny: TinyWorkspace) -> None:
    write_mini_transfer(tiny.senteval)


QUICK = {"models": ["{bert}"], "tasks": ["TREC"]}  # --quick: both probes on tiny data (no SentEval checkout)
BENCHMARK = claim(__name__, quick=QUICK, plot=plot, prepare_quick=prepare_quick)
