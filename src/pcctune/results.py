"""Typed, versioned result records (in the spirit of MTEB's ``TaskResult``).

Every result pcctune writes is one of six records, each tagged with ``kind`` and
``schema_version``:

- ``EvalResult``: one model evaluated (``pcctune eval``): STS and/or transfer scores with
  their breakdown, and what produced them (protocol, data hashes, versions, wall time);
- ``RunResult``: one training run (``pcctune train``): the STS scores after each stage,
  one ``StageRecord`` per trained stage, the config, and the pairs and data hashes of the test sets
  (schema 3; a record written before has neither, and loads with both empty), and one ``SourceLeakage`` per
  source a stage trains or selects on (``leakage_audit``; empty in a record written before it); schema 4 adds
  each stage's starting dev score (``StageRecord.start_dev_spearman``; ``None`` in a record written before), and
  schema 5 whether its dev-best checkpoint was its last dev evaluation (``StageRecord.best_at_last_evaluation``),
  schema 7 the steps ``on_nonfinite: skip`` dropped (``StageRecord.skipped_steps``), schema 8 torch's thread
  count in each process that trained a stage (``StageRecord.torch_threads``) and in the one that evaluated
  (``RunResult.torch_threads``; ``EvalResult.torch_threads`` too), schema 9 the prompt each stage's model read
  before every sentence (``StageRecord.prompt``);
- ``BenchmarkResult``: rows of a benchmark script, each a label, STS scores and details;
- ``AuditResult``: training pairs checked against the test sets at every leakage level;
- ``CompareResult``: B − A of two sets of runs or two models, each difference with its interval and verdict
  (schema 6 adds the sides' names, ``name_a`` and ``name_b``; "A" and "B" in a record written before);
- ``FamilyResult``: several B − A on one task read as one family (Holm's decisions, Bonferroni's simultaneous
  intervals), from schema 6.

``load_result`` reads any of them, including files written before records were typed
(schema version 0), which are migrated on load. The CLI, ``report`` and the benchmarks read
and write only these.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field, field_validator

from pcctune.errors import PcctuneError, first_refusal
from pcctune.io import write_text

SCHEMA_VERSION = 10
Scores = dict[str, float]


def utc_now() -> str:
    """When a record is made: the UTC time to the second, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _finite(scores: Scores | None) -> Scores | None:
    for name, value in (scores or {}).items():
        if not math.isfinite(value):
            raise ValueError(f"score {name} is {value}, not a finite number")
    return scores


class Record(BaseModel):
    """What every record shares: strict fields, a kind tag, a schema version, disk round trips."""

    model_config = ConfigDict(extra="forbid")
    kind: ClassVar[str]
    schema_version: int = SCHEMA_VERSION

    def to_disk(self, path: str | Path) -> Path:
        """Write as indented JSON, atomically (the previous file survives a failed write)."""
        payload = {"kind": self.kind, **self.model_dump(mode="json")}
        return write_text(path, json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n")

    @classmethod
    def from_disk(cls, path: str | Path) -> Self:
        """The record at ``path``; a record of another kind is refused in one line."""
        record = load_result(path)
        if not isinstance(record, cls):
            raise PcctuneError(f"{path}: a {record.kind} result, not a {cls.kind} result")
        return record


class SubsetScore(BaseModel):
    """One subset of an STS task (a year's source file, e.g. STS12's ``MSRpar``): its pair count and its Spearman
    and Pearson correlations (× 100)."""

    name: str
    n: int
    spearman: float
    pearson: float


class Interval(BaseModel):
    """A paired bootstrap confidence interval of a task's two correlations (× 100): the pairs are resampled with
    replacement, each resample scored by Spearman and Pearson (``pcctune.evaluation.interval``)."""

    confidence: float = Field(description="the interval's coverage, e.g. 0.95")
    method: str = Field(description="scipy.stats.bootstrap's method: BCa, percentile or basic")
    resamples: int
    seed: int
    spearman: tuple[float, float]
    pearson: tuple[float, float]


Verdict = Literal["win", "loss", "tie"]


class Difference(BaseModel):
    """B − A of one score (× 100) with its confidence interval (``pcctune.evaluation.compare``).

    A difference is a ``win`` (for B) or a ``loss`` only where its interval excludes 0; an interval that holds 0 is a
    ``tie``. ``low`` and ``high`` are ``None`` where no interval exists (fewer than 2 runs on a side, or a test set too
    small to resample), and then there is no verdict either."""

    mean: float = Field(
        description="B − A: the mean difference of paired seeds, the difference of the two sides' means, "
        "or the difference of two models' scores on the same test pairs"
    )
    low: float | None
    high: float | None
    confidence: float = Field(description="the interval's coverage, e.g. 0.95")
    method: Literal["paired t", "Welch t", "paired bootstrap"] | None = Field(
        description="paired t: over the seeds both sides share; Welch t: over unpaired runs; paired bootstrap: over "
        "the test pairs scored by both models; None: fewer than 2 runs on a side"
    )
    n_a: int = Field(description="the runs of A used (the test pairs, for a bootstrap)")
    n_b: int = Field(description="the runs of B used (the test pairs, for a bootstrap)")
    resamples: int | None = Field(None, description="the bootstrap's resamples")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def paired(self) -> bool:
        """Whether A and B were compared pair by pair (the same seeds, or the same test pairs)."""
        return self.method in ("paired t", "paired bootstrap")

    @property
    def n(self) -> int:
        """The seeds paired, the test pairs resampled, or the unpaired runs of both sides together."""
        return self.n_a if self.paired else self.n_a + self.n_b

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> Verdict | None:
        """``win`` (the interval excludes 0, B above A), ``loss`` (excludes 0, B below A), ``tie`` (holds 0)."""
        if self.low is None or self.high is None:
            return None
        if self.low > 0:
            return "win"
        if self.high < 0:
            return "loss"
        return "tie"

    def sentence(self, a: str = "A", b: str = "B", digits: int = 2) -> str:
        """The difference in plain words, e.g. ``B − A = +0.28 [-0.31, +0.87] over 3 paired seeds: a tie``."""
        text = f"{b} − {a} = {self.mean:+.{digits}f}"
        verdict = self.verdict
        if verdict is None or self.low is None or self.high is None:
            if self.method == "paired bootstrap":
                return f"{text} over {self.n} test pairs: no interval (too few pairs to resample)"
            runs = "run" if self.n_a == 1 else "runs"
            return f"{text} over {self.n_a} {runs} of {a} and {self.n_b} of {b}: no interval (it needs 2 runs a side)"
        text += f" [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"
        if self.method == "paired bootstrap":
            text += f" over {self.n} test pairs (paired bootstrap)"
        elif self.method == "paired t":
            text += f" over {self.n} paired seeds"
        else:
            text += f" over {self.n_a} runs of {a} and {self.n_b} of {b} (unpaired)"
        verdicts = {"win": f"a win for {b}", "loss": f"a loss for {b}", "tie": "a tie"}
        return f"{text}: {verdicts[verdict]}"


class TaskScore(BaseModel):
    """One STS task's headline number (``spearman``, × 100) and its breakdown."""

    name: str
    n: int
    spearman: float
    pearson: float
    subsets: list[SubsetScore] = Field(default_factory=list)
    mean: float | None = None
    wmean: float | None = None
    interval: Interval | None = Field(None, description="bootstrap interval (scored pair files: pcctune eval --pairs)")


class TransferScore(BaseModel):
    """One SentEval transfer task: the probe's test accuracy (%) over ``n_test`` examples, and its F1 where the task
    reports one (MRPC)."""

    name: str
    accuracy: float
    n_test: int
    f1: float | None = None


class EvalResult(Record):
    """What ``pcctune eval`` (and ``pcctune.evaluate``) records: STS and/or transfer scores with everything
    that made them (protocol, data hashes, model, template, pooling, dtype, precision, library versions)."""

    kind: ClassVar[str] = "eval"
    protocol: str
    created: str = Field(default_factory=utc_now)
    model: str
    adapter: str | None = Field(None, description="the LoRA adapter folder put on the model (pcctune eval --adapter)")
    template: str | None = None
    prompt: str | None = Field(
        None, description="the prompt every sentence was encoded under, as model.encode applies it (None: none)"
    )
    pooling: str | None = None
    dtype: str = "fp32"
    quantization: str = Field("none", description="backbone precision: none (in dtype), saved, nf4 or fp4")
    cpu_settings: str | None = Field(
        None, description="the CPU speed settings in force and why (pcctune.host_settings.settings_line)"
    )
    torch_threads: int | None = Field(
        None, description="torch's intra-op thread count in the process that made the record (None before schema 8)"
    )
    seed: int | None = Field(None, description="seeds torch and the bootstrap intervals of a user's pairs")
    data_dir: str | None = Field(description="the SentEval folder read; None when only a user's pairs were scored")
    data_files_sha256: dict[str, str] = Field(
        default_factory=dict, description="SHA-256 of every file read (a Hub dataset: of its pairs, by its name)"
    )
    versions: dict[str, str] = Field(default_factory=dict)
    wall_time_s: float = 0.0
    sts: Scores | None = None
    sts_detail: list[TaskScore] | None = None
    transfer: Scores | None = None
    transfer_probe: str | None = Field(None, description="the transfer probe: sklearn or senteval")
    probe_seed: int | None = Field(None, description="seeds the sklearn transfer probe's folds (None: before kept)")
    transfer_detail: list[TransferScore] | None = None

    @field_validator("sts", "transfer")
    @classmethod
    def _check_sts(cls, scores: Scores | None) -> Scores | None:
        return _finite(scores)

    def sections(self) -> dict[str, Scores]:
        """``{"sts": …, "transfer": …}`` for the sections this result has."""
        return {name: scores for name, scores in (("sts", self.sts), ("transfer", self.transfer)) if scores}


class StageRecord(BaseModel):
    """One trained stage of a run (``RunResult.stages``): its loss, data, the dev checkpoint it chose, what it cost
    and the leakage filter on its pairs."""

    stage: str
    loss: str
    init: str | None = Field(None, description="what it continued: the previous stage's 'final' or 'best' model")
    prompt: str | None = Field(
        None,
        description="the prompt its model read before every sentence, in training, dev selection and its test "
        "evaluation, as model.encode applies it (None: none, or a record before schema 9)",
    )
    train_examples: int
    trainable_fraction: float
    best_checkpoint: str | None = None
    best_dev_spearman: float | None = Field(
        None,
        description="Spearman's ρ on the dev set at the selected checkpoint, as a fraction in [−1, 1]: the scale of "
        "the dev evaluator and of sentence-transformers' (test scores are × 100)",
    )
    start_dev_spearman: float | None = Field(
        None,
        description="Spearman's ρ on the same dev set of the model the stage started from (the base model, or the "
        "previous stage's), scored before its first step, as best_dev_spearman; a best_dev_spearman at or below it "
        "means no checkpoint improved on the start (None before schema 4, or without a dev set)",
    )
    best_at_last_evaluation: bool | None = Field(
        None,
        description="whether best_checkpoint is the stage's last dev evaluation: its dev score may still have been "
        "rising, so a search that stopped the schedule there has not seen its peak (None before schema 5, or "
        "without a dev set)",
    )
    skipped_steps: int | None = Field(
        None,
        description="the steps on_nonfinite: skip dropped for a non-finite loss or gradient: they applied nothing "
        "(None before schema 7)",
    )
    final_dir: str
    plot: str
    wall_time_s: float = Field(description="the stage's training time, summed over the processes that trained it")
    cpu_time_s: float | None = Field(
        None, description="their CPU seconds, all threads (pauses and competing processes do not count)"
    )
    torch_threads: list[int] | None = Field(
        None,
        description="torch's intra-op thread count in each process that trained the stage, in order: the most its "
        "training steps ran on (None before schema 8, or where a checkpoint from before it started the stage)",
    )
    peak_memory_mb: float | None = None
    memory_kind: str | None = None
    sessions: int | None = Field(None, description="how many processes trained the stage: 1 + its resumes")
    leakage_filter: dict[str, Any] = Field(
        default_factory=dict,
        description="the filter on its training and dev pairs: level, the user's own test files it also checked "
        "against (leakage_against) and the training pairs they removed; empty where the source is not filtered",
    )
    dev_pairs: dict[str, int] = Field(
        default_factory=dict,
        description="the pairs of each dev part that selected its checkpoint, after the leakage filter (holdout: "
        "the share of the training pairs left out of training)",
    )


SourceRole = Literal["train", "dev", "dpo", "head"]
"""What a stage does with a source: trains on it, selects its checkpoints on it, draws DPO candidates from it, or
first fits its regression head on it."""
ROLE_LABELS: dict[str, str] = {"train": "", "dev": " (dev)", "dpo": " (DPO candidates)", "head": " (head warm-up)"}
"""What follows a source's name in the log and the audit table, by its role."""
AuditRole = Literal["train", "dev"]
"""What ``pcctune data audit`` checks a source as: training data or a dev set."""


class SourceLeakage(BaseModel):
    """One source a stage trains or selects on, checked against the test sets before the run's first step
    (``pcctune.training.audit``): its pairs, those a filter at ``level`` finds in a test set, and those removed."""

    source: str = Field(description="the file, folder, Hub dataset or built-in set, as the config names it")
    stage: str = Field(description="the stage that trains or selects on it")
    role: SourceRole = Field(
        description="train: the stage's training pairs (a triplet counts as its anchor–positive and anchor–negative "
        "pairs); dev: a part of the dev set that selects its checkpoints; dpo: the candidate pairs its preferences "
        "are drawn from; head: the NLI pairs its regression head is first fitted on"
    )
    level: str = Field(description="the leakage level test_pairs and by_task are counted at: the filter's, else pair")
    filter: str = Field(
        description="the filter run on this source: its level, or none (the pairs kept whole: `leakage: none`, or "
        "triplets, which are counted and never filtered)"
    )
    pairs: int = Field(description="the source's pairs, before the filter")
    test_pairs: int = Field(description="of them, those a filter at `level` finds in a test set")
    removed: int = Field(description="of them, those the filter removed (test_pairs, or 0 where nothing is filtered)")
    by_task: dict[str, int] = Field(
        description="test set → the test_pairs found in it (a pair in two test sets counts in both)"
    )
    by_level: dict[str, int] = Field(
        description="level → the pairs a filter at that level finds (triplets are checked at pair, normalized and "
        "sentence, without the near search: sentence counts the pairs with a test sentence in them)"
    )


class RunResult(Record):
    """What ``pcctune train`` (and ``pcctune.train``) records: the STS scores after each stage, each stage's
    training record (examples, dev selection, wall time, peak memory) and the config that ran."""

    kind: ClassVar[str] = "run"
    protocol: str
    data_dir: str
    seed: int
    versions: dict[str, str] = Field(default_factory=dict)
    cpu_settings: str | None = Field(
        None, description="the CPU speed settings in force and why (pcctune.host_settings.settings_line)"
    )
    torch_threads: int | None = Field(
        None, description="torch's intra-op thread count in the process that made the record (None before schema 8)"
    )
    config: dict[str, Any]
    eval_precision: str | None = Field(None, description="base of a QLoRA run's test evaluations: 16bit or 4bit")
    pairs_by_task: dict[str, int] = Field(
        default_factory=dict, description="the pairs each test task was scored on (empty before schema 3)"
    )
    data_files_sha256: dict[str, str] = Field(
        default_factory=dict, description="SHA-256 of every test file scored (empty before schema 3)"
    )
    sts_by_stage: dict[str, Scores] = Field(
        default_factory=dict,
        description="the STS numbers after each stage (and before, when scored); avg where all seven were scored",
    )
    eval_wall_time_s: dict[str, float] = Field(
        default_factory=dict, description="seconds each test evaluation of sts_by_stage took (encoding and scoring)"
    )
    stages: list[StageRecord] = Field(default_factory=list)
    leakage_audit: list[SourceLeakage] = Field(
        default_factory=list,
        description="every source each stage trains or selects on, checked against the test sets before the first "
        "step (empty in a record written before this audit)",
    )

    @field_validator("sts_by_stage")
    @classmethod
    def _check_rows(cls, rows: dict[str, Scores]) -> dict[str, Scores]:
        for scores in rows.values():
            _finite(scores)
        return rows


class BenchmarkRow(BaseModel):
    """One row of a benchmark or a claim's table: its label, its STS scores (× 100) and anything else it measured."""

    label: str
    sts: Scores = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)


class BenchmarkResult(Record):
    """What a benchmark script or a claim of ``reproductions/`` records (its ``runs.json``) and what ``pcctune sweep``
    writes (``sweep.json``): its rows, the settings in words, the library versions and its own details."""

    kind: ClassVar[str] = "benchmark"
    name: str
    settings: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    rows: list[BenchmarkRow] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)


class SourceAudit(BaseModel):
    """One source's leakage at every level (``pcctune.data.leakage``): pair counts, test sets, examples."""

    source: str
    role: AuditRole
    total: int
    flagged: dict[str, int] = Field(description="level → pairs that level's own check flags")
    removed: dict[str, int] = Field(description="level → pairs a filter at that level removes (it and those below)")
    sentences_in_test: dict[str, int] = Field(description="0, 1, 2 → pairs with that many sentences in a test set")
    by_test_set: dict[str, dict[str, int]] = Field(description="level → test set → pairs flagged against it")
    examples: dict[str, list[dict[str, Any]]] = Field(description="level → pairs first caught at that level")


class AuditResult(Record):
    """``pcctune data audit``: training and dev pairs checked against test sets at every leakage level."""

    kind: ClassVar[str] = "audit"
    test_sets: dict[str, int] = Field(description="test set → its pair count")
    data_hashes: dict[str, str] = Field(default_factory=dict)
    near_threshold: float
    ngram: int
    sources: list[SourceAudit]
    near_edge: list[dict[str, Any]] = Field(
        default_factory=list, description="flagged and unflagged pairs closest to the near threshold"
    )
    seconds: float


class ScoredModel(BaseModel):
    """What one model of a bootstrap comparison read and computed in when it was scored (``CompareResult.model_a``):
    a difference between two models is also the difference of these."""

    prompt: str | None = Field(description="the prompt it read before every sentence, as model.encode applies it")
    dtype: str = Field(description="the dtype its weights were loaded in: fp32, bf16 or fp16")
    quantization: str = Field(description="its backbone's precision: none (in dtype), nf4 or fp4")


class CompareResult(Record):
    """``pcctune compare``: B − A of each STS score with its interval, from two sets of runs (over seeds) or from two
    models (a paired bootstrap over the test pairs)."""

    kind: ClassVar[str] = "compare"
    created: str = Field(default_factory=utc_now)
    name_a: str = Field("A", description="side A's name (NAME=RUNS on the command line), A where none was given")
    name_b: str = Field("B", description="side B's name, as name_a")
    a: list[str] = Field(description="side A: its run records, or its model")
    b: list[str] = Field(description="side B: its run records, or its model")
    seeds_a: list[int] = Field(default_factory=list, description="the seeds of A's runs (none for a model)")
    seeds_b: list[int] = Field(default_factory=list, description="the seeds of B's runs (none for a model)")
    variant_a: str | None = Field(None, description="the final-stage variant of A's runs compared (--variant)")
    variant_b: str | None = Field(None, description="the final-stage variant of B's runs compared (--variant)")
    left_out: list[str] = Field(
        default_factory=list,
        description="runs of either side left out of a paired comparison: no run of their seed on the other side",
    )
    rising_a: list[str] = Field(
        default_factory=list,
        description="A's runs compared whose final stage was best at its last dev evaluation: their dev score may "
        "still have been rising where the schedule stopped (empty for models, and for runs recorded before schema 5)",
    )
    rising_b: list[str] = Field(default_factory=list, description="B's runs, as rising_a")
    mean_a: Scores = Field(
        description="A's score of each task (× 100): the mean over the runs compared (the paired seeds' where the runs "
        "are paired, so that mean_b − mean_a is the difference), or its model's"
    )
    mean_b: Scores = Field(description="B's score of each task (× 100), as mean_a")
    differences: dict[str, Difference] = Field(description="task → B − A with its interval and verdict")
    protocol: str | None = Field(
        None,
        description="the STS protocol every score compared was scored under: both sides' runs' (refused where they "
        "differ), or the models' of a bootstrap (None: a comparison of runs recorded before schema 10)",
    )
    data_dir: str | None = Field(None, description="the SentEval folder the models were scored on (a bootstrap)")
    seed: int | None = Field(None, description="the seed of the bootstrap's resamples")
    model_a: ScoredModel | None = Field(
        None, description="A's model as it was scored (a bootstrap; None for runs, and before schema 10)"
    )
    model_b: ScoredModel | None = Field(None, description="B's model as it was scored, as model_a")
    versions: dict[str, str] = Field(default_factory=dict)


class FamilyComparison(BaseModel):
    """One B of a family, read against A on one task (``pcctune.evaluation.multiple``)."""

    b: list[str] = Field(description="B's run records compared (those of the paired seeds)")
    seeds: list[int] = Field(description="the seeds both sides ran: the comparison pairs them")
    left_out: list[str] = Field(
        default_factory=list, description="runs of A or of this B left out: no run of their seed on the other side"
    )
    rising_b: list[str] = Field(
        default_factory=list, description="B's runs compared whose final stage was best at its last dev evaluation"
    )
    mean_a: float = Field(description="A's mean score over the paired seeds (× 100)")
    mean_b: float = Field(description="B's mean score over the paired seeds (× 100)")
    plain: Difference = Field(description="B − A with its uncorrected 95 % paired t interval")
    simultaneous: Difference = Field(description="B − A with Bonferroni's simultaneous interval over the family")
    p: float = Field(description="the paired t test's two-sided p-value")
    holm_p: float = Field(description="Holm's adjusted p-value over the family")
    holm_rejects: bool = Field(description="whether Holm's step-down procedure rejects B − A = 0 at the family's 5 %")
    decision: str = Field(description="what the family says of B − A, in words")


class FamilyResult(Record):
    """``pcctune compare A B1 B2 …``: each B − A on one task, read as one family of comparisons: the uncorrected
    paired interval, Holm's decision and Bonferroni's simultaneous interval (``pcctune.evaluation.multiple``)."""

    kind: ClassVar[str] = "compare-family"
    created: str = Field(default_factory=utc_now)
    name_a: str = Field("A", description="side A's name (NAME=RUNS on the command line), A where none was given")
    a: list[str] = Field(description="side A: its run records")
    seeds_a: list[int] = Field(description="the seeds of A's runs")
    variant_a: str | None = Field(None, description="the final-stage variant of A's runs compared (--variant)")
    variant_b: str | None = Field(None, description="the final-stage variant of every B's runs compared (--variant)")
    rising_a: list[str] = Field(
        default_factory=list, description="A's runs whose final stage was best at its last dev evaluation"
    )
    task: str = Field(description="the task compared (avg: the average of the seven)")
    protocol: str | None = Field(
        None, description="the STS protocol every run was scored under (None: a record before schema 10)"
    )
    family_size: int = Field(description="the comparisons the family holds: the Bs given, or the number planned")
    method: str = Field(description="the simultaneous intervals' method, level and family")
    comparisons: dict[str, FamilyComparison] = Field(
        description="each B, by its name on the command line (NAME of NAME=RUNS, else its runs as given)"
    )
    versions: dict[str, str] = Field(default_factory=dict)


AnyResult = EvalResult | RunResult | BenchmarkResult | AuditResult | CompareResult | FamilyResult
RECORDS: dict[str, type[Record]] = {
    cls.kind: cls for cls in (EvalResult, RunResult, BenchmarkResult, AuditResult, CompareResult, FamilyResult)
}


def _legacy_kind(payload: dict[str, Any]) -> str:
    """The kind of a record written before schema version 1 (no ``kind`` field)."""
    if "config" in payload and "stages" in payload:
        return "run"
    if "model" in payload and ("sts" in payload or "transfer" in payload):
        return "eval"
    if "rows" in payload or "results" in payload:
        return "benchmark"
    raise ValueError("no 'sts', 'transfer', 'stages' or 'rows' results in it")


def _migrate_benchmark(payload: dict[str, Any]) -> dict[str, Any]:
    """Benchmark files of schema 0 kept rows under ``rows`` or ``results`` with their own keys."""
    raw_rows = payload.get("rows", payload.get("results", []))
    rows = []
    for raw in raw_rows:
        label = next(str(raw[key]) for key in ("row", "variant", "loss", "label") if key in raw)
        if "concat" in raw and raw.get("concat") != "uv_absdiff":
            label = f"{label} ({raw['concat']})"
        details = {k: v for k, v in raw.items() if k != "sts"}
        rows.append({"label": label, "sts": raw.get("sts", {}), "details": details})
    details = {k: v for k, v in payload.items() if k not in ("rows", "results", "settings", "versions")}
    return {
        "schema_version": 0,
        "name": payload.get("name", "benchmark"),
        "settings": payload.get("settings", ""),
        "versions": payload.get("versions", {}),
        "rows": rows,
        "details": details,
    }


def parse_result(payload: Any, source: str = "result") -> AnyResult:
    """Validate a decoded JSON document as a result record (migrating schemas 0 and 1)."""
    if not isinstance(payload, dict):
        raise PcctuneError(f"{source}: a result file holds one JSON object, found {type(payload).__name__}")
    payload = dict(payload)
    try:
        kind = payload.pop("kind", None) or _legacy_kind(payload)
        if kind not in RECORDS:
            raise ValueError(f"unknown result kind {kind!r}")
        if "schema_version" not in payload:
            payload = _migrate_benchmark(payload) if kind == "benchmark" else {"schema_version": 0, **payload}
        if kind == "run" and payload["schema_version"] < 2 and "sts" in payload:  # schema 2 renamed it
            payload["sts_by_stage"], payload["schema_version"] = payload.pop("sts"), SCHEMA_VERSION
        if payload["schema_version"] > SCHEMA_VERSION:
            raise ValueError(f"schema version {payload['schema_version']} is newer than this pcctune reads")
        record = RECORDS[kind].model_validate(payload)
    except ValidationError as error:
        where, message = first_refusal(error, RECORDS[kind])
        raise PcctuneError(f"{source}: not a pcctune result ({where}: {message})") from None
    except ValueError as error:
        raise PcctuneError(f"{source}: not a pcctune result ({error})") from None
    assert isinstance(record, EvalResult | RunResult | BenchmarkResult | AuditResult | CompareResult | FamilyResult)
    return record


def load_result(path: str | Path) -> AnyResult:
    """Read any result record from ``path`` with one clear error for anything that is not one."""
    path = Path(path)
    if not path.is_file():
        raise PcctuneError(f"missing result file: {path}")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise PcctuneError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise PcctuneError(f"{path}: not JSON ({error.msg} at line {error.lineno})") from None
    return parse_result(payload, str(path))
