"""Hostile input through the real CLI entry point: exit code, one clear line, nothing written.

Every case builds its inputs, snapshots the working folder, runs ``pcctune …`` through
``pcctune.cli.main`` and checks: the exit code (2 for bad input or usage), no traceback, exactly
one ``error:`` line holding the case's key words, and not one file created, changed or removed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pcctune.testing import write_lines
from tests.conftest import SENTENCES, run_cli


@dataclass
class Context:
    """What a case may use: a scratch folder for its inputs, tiny models, the mini SentEval, a finished run."""

    inputs: Path
    bert: Path
    llama: Path
    senteval: Path
    finished_config: Path

    def file(self, name: str, content: str | bytes) -> str:
        path = self.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return str(path)

    def config(self, name: str = "run.yaml", stage: dict | None = None, **top) -> str:
        """A valid tiny run config (stage-2 Pearson on a pairs file) with overrides."""
        pairs = self.pairs_file()
        base_stage = {
            "name": "pcc",
            "loss": "pearson",
            "data": {"source": "pairs", "path": pairs},
            "batch_size": 4,
            "max_steps": 2,
            "eval_steps": 1,
            "dev": "none",
        }
        raw = {
            "model": str(self.bert),
            "data_dir": str(self.senteval),
            "output_dir": str(self.inputs / "out"),
            "evaluate_before": False,
            "stages": [{**base_stage, **(stage or {})}],
            **top,
        }
        return self.file(name, yaml.safe_dump(raw))

    def pairs_file(self, name: str = "pairs.jsonl", rows: int = 16) -> str:
        lines = [
            json.dumps({"sentence1": SENTENCES[i % 12], "sentence2": SENTENCES[(i + 3) % 12], "score": i % 5})
            for i in range(rows)
        ]
        return self.file(name, "\n".join(lines) + "\n")

    def senteval_copy(self, edit: Callable[[Path], None]) -> str:
        import shutil

        root = self.inputs / "senteval"
        shutil.copytree(self.senteval, root)
        edit(root)
        return str(root)

    def model_copy(self, edit: Callable[[Path], None]) -> str:
        import shutil

        folder = self.inputs / "model"
        shutil.copytree(self.bert, folder)
        edit(folder)
        return str(folder)


def _keep(folder: Path) -> None:
    """A model copy left as it is."""


def _gold(root: Path, lines: list[str]) -> None:
    write_lines(root / "downstream" / "STS" / "STS12-en-test" / "STS.gs.alpha.txt", lines)


def _input_bytes(root: Path, data: bytes) -> None:
    (root / "downstream" / "STS" / "STS12-en-test" / "STS.input.alpha.txt").write_bytes(data)


def _weights(data: bytes | Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        weights = folder / "model.safetensors"
        weights.write_bytes(data(weights.read_bytes()) if callable(data) else data)

    return edit


def _eval(c: Context, data: str | None = None, *extra: str) -> list[str]:
    return ["eval", str(c.bert), "--data", data or str(c.senteval), *extra]


def _train(c: Context, config: str, *extra: str) -> list[str]:
    return ["train", config, *extra]


def _fresh_stage2_run(c: Context) -> list[str]:
    """A run on a stage-2 set smaller than its batch, the set built anew (none kept in this process): refused after
    the set's leakage checks, which must then leave no cache entry."""
    from pcctune.data import stage2
    from pcctune.training import datasets

    stage2._build.cache_clear()
    for cached in (datasets._read, datasets._checked, datasets._scored_and_removed):
        cached.cache_clear()
    return _train(c, c.config(stage={"data": {"source": "stage2"}, "batch_size": 8}))


def _sweep(c: Context, distribution: str, key: str = "stages.0.learning_rate") -> list[str]:
    space = c.file("space.yaml", f"{key}: {distribution}\n")
    config = c.config(stage={"dev": "sick-trial"})
    return ["sweep", config, "--space", space, "--output", str(c.inputs / "sweep")]


def _pairs_config(c: Context, name: str, content: str | bytes) -> list[str]:
    path = c.file(name, content)
    return _train(c, c.config(stage={"data": {"source": "pairs", "path": path}}))


HEADER = "sentence1,sentence2,score\n"
ROWS = "".join(f"{SENTENCES[i]},{SENTENCES[i + 1]},{i % 5}\n" for i in range(10))

# (id, arguments built from the context, key words of the error line)
CASES: list[tuple[str, Callable[[Context], list[str]], str]] = [
    # --- usage ---------------------------------------------------------------------------------
    ("unknown-command", lambda c: ["frobnicate"], "No such command"),
    ("unknown-flag", lambda c: _eval(c, None, "--nope"), "No such option"),
    ("bad-int", lambda c: _eval(c, None, "--token-budget", "many"), "Invalid value"),
    ("zero-budget", lambda c: _eval(c, None, "--token-budget", "0"), "Invalid value"),
    ("missing-argument", lambda c: ["eval"], "Missing argument"),
    ("bad-choice", lambda c: _eval(c, None, "--tasks", "everything"), "unknown task 'everything'; choose from sts, "),
    ("task-typo", lambda c: _eval(c, None, "--tasks", "STS12,STSBenchmrk"), "did you mean `STSBenchmark`?"),
    ("bad-pooling", lambda c: _eval(c, None, "--pooling", "max"), "unknown pooling 'max'; choose from mean, cls"),
    (
        "pooling-typo",
        lambda c: _eval(c, None, "--pooling", "maen"),
        "choose from mean, cls, lasttoken; did you mean `mean`?",
    ),
    ("backend-typo", lambda c: _eval(c, None, "--backend", "onxx"), "; did you mean `onnx`?"),
    (
        "bad-backend",
        lambda c: ["export", str(c.bert), "--output", str(c.inputs / "x"), "--backend", "tensorrt"],
        "unknown backend 'tensorrt'; choose from torch, onnx, openvino",
    ),
    (  # a packaged name or Hub id has no export of its own to run
        "eval-backend-of-a-name",
        lambda c: ["eval", "minilm", "--backend", "onnx", "--data", str(c.senteval)],
        "minilm is none: write one with pcctune export minilm --backend onnx --output FOLDER",
    ),
    (
        "export-over-its-model",
        lambda c: ["export", c.model_copy(_keep), "--output", str(c.inputs / "model")],
        "overlaps the model folder",
    ),
    (
        "export-adapter-inside-its-model",
        lambda c: ["export", c.model_copy(_keep), "--adapter-only", "--output", str(c.inputs / "model" / "out")],
        "overlaps the model folder",
    ),
    (
        "export-around-its-model",
        lambda c: ["export", c.model_copy(_keep), "--merge", "--output", str(c.inputs)],
        "overlaps the model folder",
    ),
    (  # an --adapter-only export holds the adapter's config and weights and nothing else
        "export-merge-an-adapter-alone",
        lambda c: [
            "export",
            str(
                Path(c.file("adapter/adapter_config.json", json.dumps({"base_model_name_or_path": str(c.bert)}))).parent
            ),
            "--merge",
            "--output",
            str(c.inputs / "merged"),
        ],
        "holds an adapter alone",
    ),
    ("bad-dtype", lambda c: _eval(c, None, "--dtype", "fp8"), "unknown dtype"),
    ("template-without-slot", lambda c: _eval(c, None, "--template", "no slot"), "exactly one {text}"),
    ("template-two-slots", lambda c: _eval(c, None, "--template", "{text} {text}"), "exactly one {text}"),
    ("resume-and-overwrite", lambda c: _train(c, c.config(), "--resume", "--overwrite"), "pass one of them"),
    ("set-without-equals", lambda c: _train(c, c.config(), "--set", "seed"), "key=value"),
    ("set-index-out-of-range", lambda c: _train(c, c.config(), "--set", "stages.5.epochs=1"), "not an index"),
    ("set-non-integer-index", lambda c: _train(c, c.config(), "--set", "stages.x.epochs=1"), "not an index"),
    ("set-inside-a-value", lambda c: _train(c, c.config(), "--set", "model.name=x"), "inside a value"),
    ("set-model-empty", lambda c: _train(c, c.config(), "--set", "model="), "--set model: "),
    ("set-bad-value", lambda c: _train(c, c.config(), "--set", "seed=many"), "--set seed: "),  # not the file's
    ("infinite-rate", lambda c: _train(c, c.config(stage={"learning_rate": float("inf")})), "learning_rate"),
    ("nan-threshold", lambda c: _train(c, c.config(stage={"contrastive_threshold": float("nan")})), "finite"),
    ("tasks-flag-naming-nothing", lambda c: _train(c, c.config(), "--tasks", ","), "--tasks names no test set"),
    ("tasks-naming-nothing", lambda c: _train(c, c.config(tasks=[])), "tasks: names no test set"),
    ("output-dir-empty", lambda c: _train(c, c.config(), "--output-dir", ""), "--output-dir is empty"),
    ("resume-from-not-a-checkpoint", lambda c: _train(c, c.config(), "--resume-from", str(c.inputs)), "not a trainer"),
    ("eval-split-without-pairs", lambda c: _eval(c, None, "--split", "dev"), "--split names the split of a --pairs"),
    ("icl-dev-none", lambda c: ["icl", str(c.llama), "--dev", "none", "--data", str(c.senteval)], "name one"),
    ("compare-unknown-loss", lambda c: _train(c, c.config(), "--compare", "pearson,magic"), "unknown loss 'magic'"),
    ("bound-nothing", lambda c: ["bound"], "and/or --test-sets"),
    ("bound-n-one", lambda c: ["bound", "--n", "1"], "at least 2"),
    ("icl-seed-negative", lambda c: ["icl", str(c.llama), "--seed", "-1", "--data", str(c.senteval)], "a seed is"),
    (
        "compare-bootstrap-seed-negative",
        lambda c: ["compare", str(c.bert), str(c.bert), "--bootstrap", "--seed", "-1", "--data", str(c.senteval)],
        "a seed is an integer from 0",
    ),
    ("icl-unknown-dev", lambda c: ["icl", str(c.llama), "--dev", "test", "--data", str(c.senteval)], "unknown dev set"),
    ("stage2-bad-leakage-level", lambda c: ["data", "stage2", "--leakage", "fold"], "Invalid value"),
    (
        "stage2-one-file-for-two",
        lambda c: ["data", "stage2", "--output", str(c.inputs / "s.jsonl"), "--report", str(c.inputs / "s.jsonl")],
        "--output and --report are both",
    ),
    (
        "stage2-report-under-a-file",
        lambda c: ["data", "stage2", "--report", c.file("f.txt", "x") + "/r.json", "--output", str(c.inputs / "s")],
        "--report ",
    ),
    (
        "bound-plot-under-a-file",
        lambda c: ["bound", "--n", "10", "--plot", c.file("g.txt", "x") + "/p.png"],
        "--plot ",
    ),
    (
        "report-output-under-a-file",
        lambda c: ["report", c.file("r.json", "{}"), "--output", c.file("h.txt", "x") + "/sub"],
        "h.txt/sub: ",
    ),
    # --- data folders and outputs -------------------------------------------------------------
    ("missing-data-folder", lambda c: _eval(c, str(c.inputs / "nowhere")), "no SentEval data folder"),
    ("data-is-a-file", lambda c: _eval(c, c.file("data.txt", "x")), "no SentEval data folder"),
    ("output-is-a-folder", lambda c: _eval(c, None, "--output", str(c.inputs)), "is a folder"),
    ("output-under-a-file", lambda c: _eval(c, None, "--output", c.file("f.txt", "x") + "/r.json"), "is a file"),
    ("encode-output-folder", lambda c: ["encode", str(c.bert), "a b", "--output", str(c.inputs)], "is a folder"),
    ("gold-all-empty", lambda c: _eval(c, c.senteval_copy(lambda r: _gold(r, ["", "", "", ""]))), "no gold scores"),
    (
        "gold-not-a-number",
        lambda c: _eval(c, c.senteval_copy(lambda r: _gold(r, ["4", "x", "1", "0"]))),
        "not a number",
    ),
    ("gold-infinite", lambda c: _eval(c, c.senteval_copy(lambda r: _gold(r, ["4", "inf", "1", "0"]))), "not a finite"),
    ("gold-nan", lambda c: _eval(c, c.senteval_copy(lambda r: _gold(r, ["4", "nan", "1", "0"]))), "not a finite"),
    ("gold-line-count", lambda c: _eval(c, c.senteval_copy(lambda r: _gold(r, ["4", "3"]))), "has 4 lines"),
    (
        "input-not-utf8",
        lambda c: _eval(c, c.senteval_copy(lambda r: _input_bytes(r, b"a\tb\n\xff\xfe\tc\n"))),
        "STS.input.alpha.txt:2: not UTF-8",
    ),
    (
        "input-without-tab",
        lambda c: _eval(c, c.senteval_copy(lambda r: _input_bytes(r, b"a b\nc\td\ne\tf\ng\th\n"))),
        "two tab-separated sentences",
    ),
    (
        "stsb-short-line",
        lambda c: _eval(
            c,
            c.senteval_copy(
                lambda r: write_lines(r / "downstream" / "STS" / "STSBenchmark" / "sts-test.csv", ["a\tb\t1.0"])
            ),
        ),
        "expected 7 tab-separated",
    ),
    (
        "sick-missing-column",
        lambda c: _eval(
            c,
            c.senteval_copy(
                lambda r: write_lines(r / "downstream" / "SICK" / "SICK_test_annotated.txt", ["pair_ID\tsentence_A"])
            ),
        ),
        "relatedness_score",
    ),
    # --- a user's pair files -----------------------------------------------------------------
    ("csv-stray-quote", lambda c: _pairs_config(c, "p.csv", HEADER + '"He said hi,there,1\n' + ROWS), "unreadable csv"),
    (
        "csv-quote-merges-rows",
        lambda c: _pairs_config(c, "p.csv", HEADER + '"He said hi,there,1\n' + ROWS + 'x,y",1\n'),
        "runs over several lines",
    ),
    ("csv-missing-score", lambda c: _pairs_config(c, "p.csv", "sentence1,sentence2\na,b\n"), "no column among score"),
    (
        "pairs-columns-unmapped",
        lambda c: _pairs_config(c, "p.csv", "sentence_1,sentence_2,gold\n" + ROWS),
        "map them with data.columns: {sentence1: sentence_1, sentence2: sentence_2, score: gold}",
    ),
    (
        "pairs-columns-mapped-to-a-missing-column",
        lambda c: _train(
            c,
            c.config(
                stage={
                    "data": {
                        "source": "pairs",
                        "path": c.file("p.csv", "sentence_1,sentence_2,gold\n" + ROWS),
                        "columns": {"sentence1": "sentence_1", "sentence2": "sentence_2", "score": "label"},
                    }
                }
            ),
        ),
        "no column 'label' for score (found: sentence_1, sentence_2, gold)",
    ),
    (
        "columns-for-a-source-without-them",
        lambda c: _train(c, c.config(stage={"data": {"source": "stage2", "columns": {"score": "gold"}}})),
        "data.columns names the columns of a hub or pairs source",
    ),
    ("stage2-smaller-than-a-batch", _fresh_stage2_run, "fewer than batch_size 8"),
    ("config-field-typo", lambda c: _train(c, c.config(stage={"learning_rte": 1e-5})), "did you mean `learning_rate`?"),
    (  # the misspelt field is named, not the field it leaves missing
        "config-required-field-typo",
        lambda c: _train(c, c.file("c.yaml", "model: m\nstages:\n  - nme: a\n    loss: pearson\n")),
        "stages.0.nme: Extra inputs are not permitted; did you mean `name`?",
    ),
    ("csv-score-not-number", lambda c: _pairs_config(c, "p.csv", HEADER + "a,b,high\n" + ROWS), "not a number"),
    ("csv-score-infinite", lambda c: _pairs_config(c, "p.csv", HEADER + "a,b,inf\n" + ROWS), "not a finite"),
    (
        "csv-huge-field",
        lambda c: _pairs_config(c, "p.csv", HEADER + "a" * 1_000_000 + ",b,1\n" + ROWS),
        "unreadable csv",
    ),
    ("csv-not-utf8", lambda c: _pairs_config(c, "p.csv", HEADER.encode() + b"\xff,b,1\n"), "not UTF-8"),
    ("tsv-field-count", lambda c: _pairs_config(c, "p.tsv", "sentence1\tsentence2\tscore\na\tb\n"), "2 fields"),
    (
        "jsonl-missing-key",
        lambda c: _pairs_config(
            c, "p.jsonl", '{"sentence1": "a", "sentence2": "b", "score": 1}\n{"sentence1": "a", "score": 2}\n'
        ),
        "row 2: missing sentence2",
    ),
    ("jsonl-invalid", lambda c: _pairs_config(c, "p.jsonl", '{"sentence1": "a",\n'), "invalid JSON"),
    ("jsonl-not-object", lambda c: _pairs_config(c, "p.jsonl", "[1, 2, 3]\n"), "expected a JSON object"),
    (
        "pairs-path-a-folder",
        lambda c: _train(c, c.config(stage={"data": {"source": "pairs", "path": str(c.inputs)}})),
        "is a folder; give a .csv, .tsv or .jsonl file of pairs",
    ),
    ("pairs-unsupported-type", lambda c: _pairs_config(c, "p.txt", "a b 1\n"), "unsupported pair file type"),
    ("pairs-empty", lambda c: _pairs_config(c, "p.jsonl", "\n"), "no pairs"),
    (
        "pairs-missing",
        lambda c: _train(c, c.config(stage={"data": {"source": "pairs", "path": "nope.jsonl"}})),
        "missing file",
    ),
    ("pairs-fewer-than-batch", lambda c: _train(c, c.config(stage={"batch_size": 64})), "fewer than batch_size 64"),
    ("infonce-on-scored-pairs", lambda c: _train(c, c.config(stage={"loss": "infonce"})), "needs triplets"),
    # --- configs ---------------------------------------------------------------------------------
    ("config-seed-negative", lambda c: _train(c, c.config(seed=-1)), "seed"),
    ("config-seed-too-large", lambda c: _train(c, c.config(seed=2**32)), "seed"),
    ("config-epochs-nan", lambda c: _train(c, c.config(stage={"epochs": float("nan"), "max_steps": -1})), "epochs"),
    ("config-epochs-inf", lambda c: _train(c, c.config(stage={"epochs": float("inf"), "max_steps": -1})), "epochs"),
    (
        "config-label-range-one-value",
        lambda c: _train(c, c.config(stage={"loss": "regression_mse", "regression": {"label_range": [1]}})),
        "label_range",
    ),
    (
        "config-label-range-reversed",
        lambda c: _train(c, c.config(stage={"loss": "regression_mse", "regression": {"label_range": [5, 0]}})),
        "low below high",
    ),
    ("eval-seed-negative", lambda c: _eval(c, None, "--seed", "-1"), "a seed is an integer from 0 to 4294967295"),
    ("eval-probe-seed-too-large", lambda c: _eval(c, None, "--probe-seed", str(2**32)), "a seed is an integer from 0"),
    ("config-missing", lambda c: _train(c, str(c.inputs / "none.yaml")), "missing config file"),
    ("config-invalid-yaml", lambda c: _train(c, c.file("c.yaml", "model: [unclosed\n")), "invalid YAML"),
    ("config-is-a-folder", lambda c: _train(c, str(c.inputs)), "is a folder; give the config file"),
    (  # where the mistake is, and what it is
        "config-yaml-error-names-its-line",
        lambda c: _train(c, c.file("c.yaml", "model: m\nstages:\n  - name: a\n - name: b\n")),
        "invalid YAML at line 4, column 2",
    ),
    ("config-octal-number", lambda c: _train(c, c.file("c.yaml", "model: m\nseed: 0123\n")), "line 2, column 7: 0123"),
    ("config-key-twice", lambda c: _train(c, c.file("c.yaml", "model: a\nmodel: b\n")), "'model' appears twice"),
    (
        "stage-names-twice",
        lambda c: _train(c, c.config(stages=[{"name": "s", "loss": "pearson", "data": {"source": "stage2"}}] * 2)),
        "two stages are named 's'",
    ),
    ("config-list-root", lambda c: _train(c, c.file("c.yaml", "- model: x\n")), "a YAML mapping"),
    ("config-not-utf8", lambda c: _train(c, c.file("c.yaml", b"model: \xff\n")), "not UTF-8"),
    ("epochs-zero", lambda c: _train(c, c.config(stage={"epochs": 0, "max_steps": -1})), "trains nothing"),
    ("stages-empty", lambda c: _train(c, c.file("c.yaml", "model: m\nstages: []\n")), "stages"),
    ("lr-negative", lambda c: _train(c, c.config(stage={"learning_rate": -1e-5})), "learning_rate"),
    ("batch-one", lambda c: _train(c, c.config(stage={"batch_size": 1})), "batch_size"),
    ("warmup-above-one", lambda c: _train(c, c.config(stage={"warmup_ratio": 1.5})), "warmup_ratio"),
    ("unknown-loss", lambda c: _train(c, c.config(stage={"loss": "magic"})), "unknown loss 'magic'"),
    ("unknown-dev", lambda c: _train(c, c.config(stage={"dev": "sts-test"})), "unknown dev set"),
    ("unknown-key", lambda c: _train(c, c.config(stage={"epoch": 3})), "Extra inputs"),
    ("config-template-without-slot", lambda c: _train(c, c.config(template="plain")), "exactly one {text}"),
    ("output-dir-is-a-file", lambda c: _train(c, c.config(output_dir=c.file("o.txt", "x"))), "is a file"),
    (
        "output-dir-under-a-file",
        lambda c: _train(c, c.config(output_dir=c.file("o.txt", "x") + "/run")),
        "output_dir ",
    ),
    (
        "check-output-dir-under-a-file",
        lambda c: _train(c, c.config(output_dir=c.file("o.txt", "x") + "/run"), "--check"),
        "o.txt is a file, not a folder",
    ),
    # settings refused with the config, before a model loads or an earlier stage trains
    ("lora-rank-zero", lambda c: _train(c, c.config(adapter={"kind": "lora", "r": 0})), "adapter.r"),
    ("lora-dropout-one", lambda c: _train(c, c.config(adapter={"kind": "lora", "dropout": 1.0})), "adapter.dropout"),
    (
        "mlm-decay-steps-zero",
        lambda c: _train(c, c.config(stage={"mlm": {"enabled": True, "decay_steps": 0}})),
        "mlm.decay_steps",
    ),
    ("dpo-beta-zero", lambda c: _train(c, c.config(stage={"loss": "dpo", "dpo": {"beta": 0}})), "dpo.beta"),
    (
        "dpo-count-below-one-batch",
        lambda c: _train(c, c.config(stage={"loss": "dpo", "dpo": {"count": 2}})),
        "dpo.count 2 builds fewer preference triples than one batch",
    ),
    (  # DPO's cross-encoder trains in its stage; its data is read before any stage trains
        "dpo-on-triplets",
        lambda c: _train(
            c,
            c.config(
                stage={
                    "loss": "dpo",
                    "data": {"source": "simcse_csv", "path": c.file("t.csv", "sent0,sent1,hard_neg\na,b,c\n")},
                }
            ),
        ),
        "source 'simcse_csv' has no scores",
    ),
    (
        "sentence-cut-without-template",
        lambda c: _train(c, c.config(stage={"sentence_max_tokens": 8})),
        "sentence_max_tokens cuts the sentence before it fills the template",
    ),
    ("pairs-without-path", lambda c: _train(c, c.config(stage={"data": {"source": "pairs"}})), "give data.path"),
    ("set-octal-number", lambda c: _train(c, c.config(), "--set", "seed=0123"), "0123 is read as 83"),
    ("tasks-flag-named", lambda c: _train(c, c.config(), "--tasks", "sts,nonsense"), "error: --tasks: "),
    ("report-to-not-installed", lambda c: _train(c, c.config(report_to="wandb")), "pip install wandb"),
    ("compare-loss-twice", lambda c: _train(c, c.config(), "--compare", "pearson,pearson"), "names 'pearson' twice"),
    (  # the compared loss needs triplets; the stage has scored pairs: refused before the first variant trains
        "compare-loss-on-other-data",
        lambda c: _train(c, c.config(), "--compare", "pearson,infonce"),
        "needs triplets",
    ),
    ("dev-file-missing", lambda c: _train(c, c.config(stage={"dev": str(c.inputs / "no.csv")})), "dev reads"),
    (
        "leakage-against-missing",
        lambda c: _train(
            c,
            c.config(
                stage={
                    "data": {"source": "pairs", "path": c.pairs_file(), "leakage_against": [str(c.inputs / "t.tsv")]}
                }
            ),
        ),
        "data.leakage_against reads",
    ),
    (
        "leakage-against-not-a-test-set",
        lambda c: _train(
            c,
            c.config(
                stage={
                    "data": {"source": "pairs", "path": c.pairs_file(), "leakage_against": [c.file("t.txt", "a b 1\n")]}
                }
            ),
        ),
        "a folder in the Hub's file layout or a Hub dataset id",
    ),
    (
        "snli-folder-missing",
        lambda c: _train(
            c, c.config(stage={"loss": "infonce", "data": {"source": "snli", "path": str(c.inputs / "x")}})
        ),
        "data reads",
    ),
    (
        "download-sha256-without-nli",
        lambda c: ["data", "download", "--dest", str(c.inputs / "d"), "--sha256", "0" * 64],
        "--sha256 checks the NLI triplets' file",
    ),
    # --- sweeps: a bad search space is refused before its folder is made ------------------------------
    (
        "sweep-search-seed-among-test-seeds",
        lambda c: [*_sweep(c, "{type: float, low: 0.0001, high: 0.001}"), "--set", "seed=2", "--seeds", "3"],
        "is also one of the seed runs 1–3",
    ),
    ("sweep-log-from-zero", lambda c: _sweep(c, "{type: float, low: 0, high: 0.1, log: true}"), "needs low > 0"),
    ("sweep-infinite-bound", lambda c: _sweep(c, "{type: float, low: 0.0001, high: .inf}"), "high: "),
    ("sweep-nan-bound", lambda c: _sweep(c, "{type: float, low: .nan, high: 0.1}"), "low: "),
    ("sweep-unknown-type", lambda c: _sweep(c, "{type: flot, low: 0.1, high: 0.2}"), "learning_rate: type: "),
    ("sweep-unknown-field", lambda c: _sweep(c, "{type: float, low: 0.1, high: 0.2, step: 2}"), "step: Extra"),
    (
        "sweep-key-the-config-lacks",
        lambda c: _sweep(c, "{type: float, low: 0.1, high: 0.2}", key="stages.0.bogus"),
        "search space stages.0.bogus: Extra inputs",
    ),
    (
        "sweep-value-the-config-refuses",
        lambda c: _sweep(c, "{type: int, low: 1, high: 8}", key="stages.0.batch_size"),
        "search space stages.0.batch_size: ",
    ),
    # --- models ----------------------------------------------------------------------------------
    ("unknown-model", lambda c: ["eval", "./no/such/model", "--data", str(c.senteval)], "no such folder"),
    (
        "run-path-mistyped",
        lambda c: ["eval", str(c.finished_config.parent / "out" / "stage2-pcc" / "final"), "--data", str(c.senteval)],
        "out holds stage1-pcc/final",
    ),
    ("folder-without-model", lambda c: ["eval", str(c.inputs), "--data", str(c.senteval)], "holds no model"),
    (
        "weights-empty",
        lambda c: ["eval", c.model_copy(_weights(b"")), "--data", str(c.senteval)],
        "could not load model",
    ),
    (
        "weights-truncated",
        lambda c: ["eval", c.model_copy(_weights(lambda b: b[: len(b) // 2])), "--data", str(c.senteval)],
        "could not load model",
    ),
    (
        "weights-random",
        lambda c: ["eval", c.model_copy(_weights(bytes(range(256)) * 64)), "--data", str(c.senteval)],
        "could not load model",
    ),
    ("gguf-not-gguf", lambda c: ["encode", c.file("m.gguf", b"not a gguf file at all"), "a b"], "not a GGUF file"),
    (  # offline, a Hub id with no cached copy cannot load: refused before the leakage audit and the run folder
        "train-uncached-hub-model-offline",
        lambda c: _train(c, c.config(model="nobody/no-such-model")),
        "model 'nobody/no-such-model': not a packaged name or a folder, and as a Hub id not in the cache",
    ),
    (
        "check-uncached-hub-model-offline",
        lambda c: _train(c, c.config(model="nobody/no-such-model"), "--check"),
        "while the Hub is offline (HF_HUB_OFFLINE)",
    ),
    ("train-damaged-model", lambda c: _train(c, c.config(model=c.model_copy(_weights(b"")))), "could not load model"),
    # --- reports and bound -----------------------------------------------------------------------
    (
        "report-json-list",
        lambda c: ["report", c.file("r.json", "[1, 2]"), "--output", str(c.inputs / "rep")],
        "one JSON object",
    ),
    (
        "report-empty-sts",
        lambda c: ["report", c.file("r.json", '{"sts": {}}'), "--output", str(c.inputs / "rep")],
        "not a pcctune result",
    ),
    (
        "report-string-values",
        lambda c: [
            "report",
            c.file("r.json", json.dumps({"model": "m", "protocol": "p", "data_dir": "d", "sts": {"STS12": "high"}})),
            "--output",
            str(c.inputs / "rep"),
        ],
        "not a pcctune result",
    ),
    ("report-not-json", lambda c: ["report", c.file("r.json", "{oops"), "--output", str(c.inputs / "rep")], "not JSON"),
    (
        "report-missing",
        lambda c: ["report", str(c.inputs / "none.json"), "--output", str(c.inputs / "rep")],
        "no result JSON",
    ),
    (
        "report-output-is-a-file",
        lambda c: ["report", c.file("r.json", "{}"), "--output", c.file("o.txt", "x")],
        "is a file",
    ),
    (  # the scatter's task is read before the bar plots are written
        "report-scatter-unknown-task",
        lambda c: [
            "report",
            str(c.finished_config.parent / "out" / "results.json"),
            "--output",
            str(c.inputs / "rep"),
            "--scatter-model",
            str(c.bert),
            "--scatter-task",
            "Bogus",
            "--data",
            str(c.senteval),
        ],
        "unknown STS task 'Bogus'",
    ),
    (
        "bound-results-missing",
        lambda c: ["bound", "--n", "10", "--results", str(c.inputs / "none.json"), "--plot", str(c.inputs / "b.png")],
        "missing result file",
    ),
    # --- run folders -------------------------------------------------------------------------------
    ("rerun-finished-run", lambda c: _train(c, str(c.finished_config)), "--resume to continue it or --overwrite"),
    (  # the user's own folder, with a config.yaml of theirs in it: --overwrite must not empty it
        "overwrite-a-folder-of-other-files",
        lambda c: _train(
            c, c.config(output_dir=str(Path(c.file("mine/config.yaml", "notes: 1\n")).parent)), "--overwrite"
        ),
        "holds other files and no pcctune run",
    ),
    (
        "train-into-a-folder-of-other-files",
        lambda c: _train(c, c.config(output_dir=str(Path(c.file("mine/notes.txt", "notes")).parent))),
        "give a new or empty folder",
    ),
    (
        "failing-rerun-of-finished-run",
        lambda c: _train(c, str(c.finished_config), "--set", "stages.0.learning_rate=-1"),
        "learning_rate",
    ),
    (
        "resume-with-changed-seed",
        lambda c: _train(c, str(c.finished_config), "--resume", "--set", "seed=7"),
        "other settings",
    ),
    (
        "resume-with-changed-lr",
        lambda c: _train(c, str(c.finished_config), "--resume", "--set", "stages.0.learning_rate=0.5"),
        "other settings",
    ),
    ("resume-nothing", lambda c: _train(c, c.config(), "--resume"), "nothing to resume"),
]


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def finished_run(tiny_bert, shared_senteval, tmp_path_factory) -> Path:
    """A finished tiny run, trained through the CLI; the run-folder cases must leave it byte-for-byte as it is."""
    from pcctune.cli import main  # noqa: F401  (imported so a failure here is an import error, not a case)

    root = tmp_path_factory.mktemp("finished")
    context = Context(root, tiny_bert, tiny_bert, shared_senteval, root / "run.yaml")
    config = Path(context.config("run.yaml"))
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "pcctune.cli", "train", str(config)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (root / "out" / "results.json").is_file()
    return config


@pytest.mark.parametrize(("builder", "words"), [(b, w) for _, b, w in CASES], ids=[case for case, _, _ in CASES])
def test_bad_input_is_one_clear_line_and_writes_nothing(
    builder, words, tmp_path, monkeypatch, capsys, tiny_bert, tiny_llama, shared_senteval, finished_run
):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    context = Context(inputs, tiny_bert, tiny_llama, shared_senteval, finished_run)
    args = builder(context)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    watched = [tmp_path, finished_run.parent]
    before = [_snapshot(root) for root in watched]
    code, output = run_cli(args, capsys)
    assert code == 2, output
    assert "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    assert words in errors[0], output
    assert [_snapshot(root) for root in watched] == before, "files were created, changed or removed"


def test_the_battery_is_large_and_its_cases_are_named_apart():
    assert len(CASES) >= 60
    assert len({case for case, _, _ in CASES}) == len(CASES)
