"""Typed run configs: one YAML file describes a whole run, and the run writes it back out.

A run is a model (with template, pooling, dtype, adapter) and a list of stages. Each stage is
one sentence-transformers trainer run: data, loss, batch, optimisation, dev set, output.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pcctune.data.dev import COMBINED_DEV, dev_entries
from pcctune.data.leakage import NEAR_THRESHOLD, OWN_DATA_LEVEL, PAPER_LEVEL, LeakageLevel
from pcctune.data.local import PATH_PREFIXES, is_local
from pcctune.data.nli import SNLI_SPLITS
from pcctune.data.pairs import PAIR_FILE_SUFFIXES
from pcctune.data.task_selection import TASK_GROUPS, task_name
from pcctune.data.tasks import SEVEN_TASKS
from pcctune.data.transfer import TRANSFER_TASKS
from pcctune.errors import PcctuneError, closest, first_refusal
from pcctune.io import write_yaml
from pcctune.losses import dpo, infonce, mlm, pearson_plus, regression, soft_spearman
from pcctune.losses.base import EmbeddingLoss
from pcctune.losses.length_chunks import LengthChunks
from pcctune.losses.registry import loss_spec, resolve_loss, warn_if_renamed
from pcctune.modeling.adapters import AdapterConfig
from pcctune.modeling.build import PoolingName
from pcctune.modeling.dtypes import DtypeName
from pcctune.modeling.template import Template
from pcctune.paths import config_path
from pcctune.seeding import DEFAULT_SEED, MAX_SEED
from pcctune.yaml_input import read_yaml


class Strict(BaseModel):
    """A config section that refuses a key it does not know (a misspelt setting is an error, not a default) and an
    infinite or NaN number."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


TRIPLET_SOURCES = ("simcse_csv", "snli")
"""The sources of NLI triplets: audited against the test sets (``pair`` and ``sentence``), never filtered."""


class DataConfig(Strict):
    """Training data of one stage.

    - ``stage2``: STS-B train + SICK-R train filtered against every test set (Pcc-tuning App. B);
    - ``pairs``: a csv/tsv/jsonl file of sentence1, sentence2, score;
    - ``simcse_csv``: SimCSE's NLI csv (sent0, sent1, hard_neg);
    - ``snli``: (premise, entailment, contradiction) from an SNLI-format folder (``splits``);
    - ``snli_regression``: SNLI pairs scored contradiction 0, neutral 1, entailment 2 (regression §4.1);
    - ``hub``: a Hugging Face dataset (``name``, ``subset``, ``split``, ``revision``, ``data_files``, ``columns``),
      triplets or scored pairs as the loss needs (``pcctune.data.hub``).
    """

    source: Literal["stage2", "pairs", "simcse_csv", "snli", "snli_regression", "hub"] = Field(
        description="where the stage's examples come from (the kinds above)"
    )
    path: str | None = Field(
        None,
        description="the file of `pairs` / `simcse_csv`, or the SNLI folder of `snli` (default: the SentEval data's)",
    )
    splits: list[str] = Field(list(SNLI_SPLITS), description="SNLI splits read by `snli` and `snli_regression`")
    rescale_sick: bool = Field(False, description="map SICK-R scores 1–5 to 0–5 by 5·(x−1)/4 (Pcc-tuning, Limitations)")
    leakage: LeakageLevel | Literal["none"] | None = Field(
        None,
        description="what the leakage filter removes from scored training pairs (every source but the triplets of "
        "simcse_csv and snli, which are counted, not filtered) and from the stage's dev set: `pair` (test pairs in "
        "either order, the paper's filter), `normalized`, `near` or `sentence` (no test sentence left); each level "
        "includes those below it (docs/leakage.md); `none` keeps them (not for stage2), and the run still counts them; "
        "default: `pair` for stage2 (the paper's 5,398 pairs) and triplets, `normalized` for your own scored pairs "
        "(pairs, hub, snli_regression), which a saved config then names",
    )
    near_threshold: float = Field(
        NEAR_THRESHOLD, gt=0, le=1, description="the `near` level's Jaccard similarity of character 3-grams"
    )
    name: str | None = Field(None, description="hub: a Hub dataset id or a local folder in the Hub's file layout")
    subset: str | None = Field(None, description="hub: the dataset's configuration (e.g. triplet of all-nli)")
    split: str = Field("train", description="hub: the split to read")
    revision: str | None = Field(None, description="hub: a commit, branch or tag, for a reproducible run")
    data_files: str | None = Field(None, description="hub: one file of the repository (e.g. nli_for_simcse.csv)")
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="hub and pairs: pcctune's column → the dataset's or file's (anchor/positive/negative, or "
        "sentence1/sentence2/score: e.g. {sentence1: sentence_1, sentence2: sentence_2, score: gold})",
    )
    limit: int | None = Field(default=None, ge=1, description="use only the first N examples (quick runs)")
    leakage_against: list[str] = Field(
        default_factory=list,
        description="your own test sets (.csv/.tsv/.jsonl pair files, folders in the Hub's file layout or Hub dataset "
        "ids, their test split): every dev part is also filtered against them, and the training pairs at `leakage` "
        "where the stage filters them; the run's record and model card say what was removed (a test set the run's "
        "`tasks` scores is added by itself)",
    )

    @field_validator("leakage_against")
    @classmethod
    def _test_sets(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if not is_test_set(entry):
                raise ValueError(
                    f"leakage_against: {entry!r} is not a .csv, .tsv or .jsonl pair file, a folder in the Hub's file "
                    "layout or a Hub dataset id (owner/name)"
                )
        return entries

    @property
    def filter_level(self) -> LeakageLevel | None:
        """The level the leakage filter runs at, or ``None`` where the stage keeps its test pairs (``leakage:
        none``)."""
        if self.leakage == "none":
            return None
        assert self.leakage is not None  # validation sets the source's default
        return LeakageLevel(self.leakage)

    @property
    def filters_training(self) -> bool:
        """Whether the training pairs go through the leakage filter: for every scored source (``stage2``, ``pairs``,
        ``hub``, ``snli_regression``) unless ``leakage: none``; triplets are counted, never filtered."""
        return self.filter_level is not None and self.source not in TRIPLET_SOURCES

    @model_validator(mode="after")
    def _names_its_file(self) -> DataConfig:
        if self.source in ("pairs", "simcse_csv") and not self.path:
            raise ValueError(f"source {self.source!r} reads the file data.path names: give data.path")
        if self.source == "hub" and not self.name:
            raise ValueError("source 'hub' reads the dataset data.name names (a Hub dataset id or folder): give it")
        if self.columns and self.source not in ("hub", "pairs"):
            raise ValueError(f"data.columns names the columns of a hub or pairs source; {self.source!r} has its own")
        return self

    @property
    def default_level(self) -> LeakageLevel:
        """The source's level where none is given: the paper's for the built-in stage-2 set (and triplets, whose
        stage filters its built-in dev sets there), the stricter ``OWN_DATA_LEVEL`` for a user's own data."""
        return PAPER_LEVEL if self.source in ("stage2", *TRIPLET_SOURCES) else OWN_DATA_LEVEL

    @model_validator(mode="after")
    def _leakage_only_for_scored_pairs(self) -> DataConfig:
        """The source's default level where none is given (``default_level``); another level refused for triplets."""
        default = self.default_level
        # the default level is what a saved config writes for every source: only another level is refused
        if self.source in TRIPLET_SOURCES and self.leakage not in (None, default):
            raise ValueError(
                f"data.leakage filters scored pairs (stage2, pairs, hub, snli_regression), not {self.source!r} "
                "triplets, which the run counts against the test sets and trains on as they are; remove it (the "
                f"stage's built-in dev sets are filtered at {default.value}, its dev files at {OWN_DATA_LEVEL.value})"
            )
        if self.leakage == "none" and self.source == "stage2":
            raise ValueError(
                "stage2 is STS-B and SICK-R train less their test pairs: it has no `leakage: none`; to train on the "
                "files as they are, name them as source: pairs"
            )
        if self.leakage is None:
            self.leakage = default
        return self

    @model_validator(mode="before")
    @classmethod
    def _legacy_normalization(cls, values: Any) -> Any:
        """Configs written before leakage levels said ``normalization``: ``exact`` is the ``pair`` level, and
        whitespace or case folding is read as ``normalized`` (which folds both, and punctuation)."""
        if isinstance(values, dict) and "normalization" in values:
            values = dict(values)
            legacy = values.pop("normalization")
            values.setdefault("leakage", "pair" if legacy == "exact" else "normalized")
        return values


class RegressionConfig(Strict):
    """Head and penalty of the regression losses (Translated ReLU, Smooth K2, L1, MSE)."""

    k: float = Field(
        regression.K,
        description="slope of the penalty outside the zero-gradient zone (Translated ReLU / Smooth K2, regression §3)",
    )
    x0: float = Field(regression.X0, description="half-width of the zero-gradient zone around the label")
    concat: regression.Concat = Field(
        regression.CONCAT, description="the head's input: (u, v), |u−v| alone, or (u, v, |u−v|)"
    )
    label_range: tuple[float, float] | None = Field(None, description="clip predictions into [low, high]")
    head_warmup: Literal["none", "nli"] = Field(
        "none", description="step 1 of the two-step recipe: fit the head on NLI (0/1/2) with the encoder frozen"
    )

    @field_validator("label_range")
    @classmethod
    def _low_below_high(cls, label_range: tuple[float, float] | None) -> tuple[float, float] | None:
        if label_range is not None and not label_range[0] < label_range[1]:
            raise ValueError(f"label_range {list(label_range)} is [low, high] with low below high")
        return label_range


PreferenceMode = Literal["anchor", "random"]
"""How DPO draws its preferences: among pairs sharing their first sentence, or among all pairs."""


class DPOConfig(Strict):
    """Embedding DPO (PromptEOL §3.3): preference model, preference sampling and β."""

    beta: float = Field(dpo.BETA, gt=0, description="β of the DPO objective (PromptEOL §3.3)")
    preference_model: str | None = Field(None, description="a trained cross-encoder; None trains one")
    preference_base: str = Field("all-MiniLM-L6-v2", description="backbone of the cross-encoder pcctune trains")
    preference_epochs: float = Field(
        1.0, gt=0, description="epochs of the cross-encoder pcctune trains when none is given"
    )
    candidates: Literal["stage2", "snli"] = Field("stage2", description="where the sentence pairs to rank come from")
    count: int = Field(2000, ge=2, description="how many preference triples are built")
    margin: float = Field(0.1, ge=0, description="smallest preference-model score gap that makes a preference")
    mode: PreferenceMode = Field(
        "random", description="'anchor': both candidates share the anchor sentence; 'random': any two pairs"
    )


class MLMConfig(Strict):
    """DCPCSE's auxiliary MLM term, λ = initial_weight · decay_rate^(step / decay_steps)."""

    enabled: bool = Field(False, description="add DCPCSE's auxiliary masked-LM term to the stage's loss")
    initial_weight: float = Field(mlm.INITIAL_WEIGHT, ge=0, description="λ at step 0 (DCPCSE §2.2)")
    decay_rate: float = Field(mlm.DECAY_RATE, gt=0, description="λ's factor every decay_steps")
    decay_steps: int = Field(mlm.DECAY_STEPS, ge=1, description="steps between decays")
    mask_probability: float = Field(
        mlm.MASK_PROBABILITY, gt=0, lt=1, description="share of tokens masked (BERT's 15 %)"
    )
    train_head: bool = Field(False, description="train the MLM head too (else frozen)")


class StageConfig(Strict):
    """One stage: one sentence-transformers trainer run (data, loss, batch, optimisation, dev selection, output)."""

    name: str = Field(description="the stage's name: its folder is stageN-NAME")
    loss: str = Field(
        description="a name in pcctune.losses.registry.LOSSES (docs/losses.md); an earlier name (RENAMED there) is "
        "read as its current one, with a warning"
    )
    data: DataConfig = Field(description="the stage's training data")
    regression: RegressionConfig = Field(RegressionConfig(), description="head and penalty of the regression losses")
    dpo: DPOConfig = Field(DPOConfig(), description="settings of the dpo loss")
    mlm: MLMConfig = Field(MLMConfig(), description="DCPCSE's auxiliary MLM term")
    batch_size: int = Field(64, ge=2, description="global batch: the Pearson group or the InfoNCE candidate pool")
    mini_batch_size: int | None = Field(None, ge=1, description="GradCache mini-batch; bounds memory")
    gradient_accumulation_steps: int = Field(1, ge=1, description="translated into mini-batches, never splits a group")
    learning_rate: float = Field(2e-5, gt=0, description="peak learning rate (AdamW, linear decay)")
    epochs: float = Field(1.0, description="passes over the data (ignored when max_steps > 0)")
    max_steps: int = Field(-1, description="optimizer steps; -1 trains for `epochs`")
    warmup_ratio: float = Field(0.0, ge=0, lt=1, description="share of the steps spent warming the learning rate up")
    weight_decay: float = Field(0.0, ge=0, description="AdamW's decoupled weight decay")
    temperature: float = Field(
        infonce.TEMPERATURE, gt=0, description="τ of InfoNCE and the contrastive losses (Pcc-tuning eq. 7)"
    )
    loss_weight: float = Field(
        pearson_plus.WEIGHT, ge=0, description="λ of the second term of pearson_mse / pearson_cosent"
    )
    soft_rank_regularization: float = Field(
        soft_spearman.REGULARIZATION,
        gt=0,
        description="ε of soft_spearman's soft ranks, in units of the batch (losses/soft_spearman.py)",
    )
    group_by_source: bool = Field(False, description="every group from one source (STS-B or SICK) of stage2 data")
    contrastive_threshold: float = Field(4.0, description="score that makes a pair a positive (loss=infonce_positives)")
    contrastive_rule: Literal[">", ">="] = Field(
        ">", description="'>': above the threshold (the paper's words); '>=': the rule that gives its 1,543 pairs"
    )
    max_seq_length: int | None = Field(
        None, ge=1, description="token budget of training inputs, template included (default: the model's)"
    )
    sentence_max_tokens: int | None = Field(
        None, ge=1, description="cut the sentence alone to N tokens before it fills the template (authors' cutoff_len)"
    )
    gradient_checkpointing: bool = Field(
        False,
        description="recompute activations in backward: less memory, slower, same numbers (the authors turn it "
        "on for 7B through prepare_model_for_kbit_training; docs/fidelity.md)",
    )
    init: Literal["final", "best"] = Field(
        "final",
        description="what this stage continues from the previous one: its last step ('final', as the authors' "
        "stage 2 continues stage 1's output adapter) or its dev-best checkpoint ('best')",
    )
    keep_start_if_best: bool = Field(
        False,
        description="save the model the stage started from as its final model where no checkpoint scored above it "
        "on dev (the starting model is always scored before the first step; false keeps the best checkpoint, which "
        "the run's line then says is below the start); holds a copy of the trainable weights in memory meanwhile",
    )
    dev: str | list[str] = Field(
        COMBINED_DEV,
        description="what selects checkpoints: a dev set of pcctune.data.dev.DEV_SETS (holdout: the share "
        "pcctune.data.dev.HOLDOUT_PERCENT of the training pairs, left out of training), a list of them and "
        ".csv/.tsv/.jsonl pair files, or none; every part filtered at data.leakage, at pair at least "
        "(docs/leakage.md); default: both built-in dev sets, scored each on its own and weighted by size",
    )
    eval_steps: int = Field(50, ge=1, description="steps between dev evaluations and checkpoints")
    on_nonfinite: Literal["stop", "skip"] = Field(
        "stop",
        description="a non-finite loss or gradient stops the stage (keeping the last checkpoint) or skips the batch",
    )
    save_every_minutes: float | None = Field(
        15,
        gt=0,
        description="also checkpoint when this many minutes have passed since the last checkpoint, so an "
        "interrupted stage loses at most that much (a resume point only, removed by the next checkpoint; "
        "results unchanged); None: checkpoints at eval_steps only",
    )
    save_total_limit: int | None = Field(
        2, ge=1, description="checkpoints kept on disk (the best dev one is never deleted); None keeps all"
    )
    logging_steps: int = Field(10, ge=1, description="steps between logged losses")
    bf16: bool = Field(False, description="train under bf16 autocast")
    length_chunks: LengthChunks = Field(
        "auto",
        description="embed a batch's rows in chunks of similar token length (same numbers, fewer padded tokens; "
        "pcctune's own losses without mini_batch_size): auto in a single process, on also with the same number of "
        "chunks on every process, off never (pcctune.losses.length_chunks)",
    )

    @field_validator("loss")
    @classmethod
    def _known_loss(cls, value: str) -> str:
        current = resolve_loss(value)
        warn_if_renamed(value)
        return current

    @field_validator("dev")
    @classmethod
    def _known_dev(cls, value: str | list[str]) -> str | list[str]:
        if value != "none":
            try:
                dev_entries(value)
            except PcctuneError as error:
                raise ValueError(str(error)) from error
        return value

    @model_validator(mode="after")
    def _groups_by_source_only_for_pearson(self) -> StageConfig:
        if self.group_by_source and self.loss not in ("pearson", "pearson_by_source"):
            raise ValueError(f"group_by_source works with the pearson and pearson_by_source losses, not {self.loss!r}")
        return self

    @model_validator(mode="after")
    def _dpo_builds_a_batch(self) -> StageConfig:
        if self.loss == "dpo" and self.dpo.count < self.batch_size:
            raise ValueError(
                f"dpo.count {self.dpo.count} builds fewer preference triples than one batch (batch_size "
                f"{self.batch_size}): raise dpo.count or lower batch_size"
            )
        return self

    @model_validator(mode="after")
    def _triplets_take_no_filter_level(self) -> StageConfig:
        """Triplets are counted against the test sets and trained on as they are, whatever their source: a level
        other than the source's default (a Hub triplet set's included) would be a filter that never runs."""
        if loss_spec(self.loss).data == "triplets" and self.data.leakage != self.data.default_level:
            raise ValueError(
                f"stage {self.name!r}: data.leakage filters scored pairs; {self.loss!r} trains on triplets, which the "
                f"run counts against the test sets and trains on as they are: remove data.leakage (its dev sets are "
                f"filtered all the same)"
            )
        return self

    @model_validator(mode="after")
    def _trains_something(self) -> StageConfig:
        if self.max_steps <= 0 and self.epochs <= 0:
            raise ValueError(f"stage {self.name!r} trains nothing: set epochs > 0 or max_steps > 0")
        return self

    @model_validator(mode="after")
    def _length_chunks_only_for_own_losses(self) -> StageConfig:
        if self.length_chunks == "on" and not issubclass(loss_spec(self.loss).cls, EmbeddingLoss):
            raise ValueError(
                f"length_chunks: on applies to pcctune's own losses; {self.loss!r} is sentence-transformers', which "
                "embeds as sentence-transformers does: remove it"
            )
        return self


class RunConfig(Strict):
    """A whole run: the model (template, pooling, dtype, adapter), its stages in order, and its evaluations."""

    model: str = Field(min_length=1, description="packaged short name, local folder, .gguf file or Hub id")
    template: str | None = Field(
        None, description="prompt template: eol, sth, sum or a string with one {text}; none for plain text"
    )
    prompt: str | None = Field(
        None,
        description="sentence-transformers prompt before every sentence, in training and evaluation, as "
        'model.encode(prompt=...) applies it; "" for none; default: the model\'s default_prompt_name (docs/prompts.md)',
    )
    prompt_name: str | None = Field(
        None, description="one of the model's saved prompts to use instead of its default (docs/prompts.md)"
    )
    pooling: PoolingName | None = Field(
        None,
        description="mean, cls or lasttoken; default: the saved one, else lasttoken for decoders, mean for encoders",
    )
    pooling_head: Literal["none", "mlp"] = Field(
        "none", description="mlp: SimCSE's and DCPCSE's dense + tanh over the pooled vector, trained and kept"
    )
    dtype: DtypeName = Field(
        "fp32", description="weight dtype asked of from_pretrained at every load (docs/fidelity.md)"
    )
    eval_dtype: Literal["fp32", "bf16"] = Field(
        "fp32", description="weights of the STS evaluations (see docs/training.md for when bf16 is faster)"
    )
    eval_protocol: str = Field(
        "simcse-senteval", description="STS protocol of the evaluations (pcctune.evaluation.protocols)"
    )
    eval_precision: Literal["16bit", "4bit"] = Field(
        "16bit",
        description="base of a QLoRA run's test evaluations: unquantized in `dtype` with the trained adapter "
        "('16bit', the authors' --load_kbit 16) or the NF4 base it trained against ('4bit')",
    )
    adapter: AdapterConfig = Field(
        AdapterConfig(),
        description="LoRA / QLoRA, or continuous prompts on a frozen backbone; none trains every weight",
    )
    report_to: Literal["none", "tensorboard", "wandb", "mlflow", "trackio"] = Field(
        "none",
        description="the HF Trainer's logging integration (install its package: tensorboard, wandb, mlflow, trackio)",
    )
    onednn: Literal["auto", "on", "off"] = Field(
        "auto",
        description="the CPU kernel of a training stage's linear layers where torch has oneDNN: auto routes QLoRA's "
        "4-bit layers through oneDNN's GEMM and leaves float32 ones on torch's default (each the faster of the two "
        "measured, benchmarks/results/speed); on routes both, off neither (true and false mean on and off); "
        "the same results up to float rounding",
    )
    dequantized_cache_mb: float = Field(
        2048,
        ge=0,
        description="QLoRA on CPU: keep up to this many MB of the frozen 4-bit base's dequantized weights during a "
        "training stage instead of dequantizing at every forward and backward pass (the same numbers; 0: none)",
    )
    dropout_sampler: Literal["torch", "gaps"] = Field(
        "torch",
        description="how a training stage on CPU draws the masks of the model's dropout layers (LoRA's too): torch "
        "(nn.Dropout, a draw per element) or gaps (the same distribution from the gaps between dropped elements, "
        "about p·n draws: faster where p ≤ 0.2, another random stream; pcctune.modeling.gap_dropout)",
    )
    seed: int = Field(
        DEFAULT_SEED,
        ge=0,
        le=MAX_SEED,
        description="seeds the trainer, the data order and the weights pcctune initialises (0 to 2**32 - 1)",
    )
    data_dir: str | None = Field(None, description="SentEval folder (default: $PCCTUNE_DATA, else the cached copy)")
    output_dir: str = Field("runs/run", description="the run folder (stages, checkpoints, results.json)")
    tasks: Literal["sts", "none"] | list[str] = Field(
        "sts",
        description="what every test evaluation scores: `sts` (the protocol's seven STS test sets), `none` (no test "
        "evaluation: the run trains and selects on dev data alone), or a list of STS task names (STS12 … "
        "SICKRelatedness in any case, the tables' STS-B and SICK-R, or sts for all seven) and your own test pair "
        "files (.csv/.tsv/.jsonl, or a Hub dataset id owner/name), each scored on its own; a comma-separated string "
        "is read as that list",
    )
    evaluate_before: bool = Field(True, description="score the untrained model on the test sets first")
    evaluate_after_each_stage: bool = Field(True, description="score every stage on the test sets (else only the last)")
    stages: list[StageConfig] = Field(
        min_length=1, description="the stages in order; each continues the previous one's model"
    )

    @field_validator("stages")
    @classmethod
    def _stage_names_apart(cls, stages: list[StageConfig]) -> list[StageConfig]:
        """A run records each stage's scores and model under its name: two stages of one name would share them."""
        names = [stage.name for stage in stages]
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice is not None:
            raise ValueError(f"two stages are named {twice!r}; give each stage its own name")
        return stages

    @field_validator("template")
    @classmethod
    def _valid_template(cls, value: str | None) -> str | None:
        return None if value is None else Template.parse(value).text

    @field_validator("tasks", mode="before")
    @classmethod
    def _task_list(cls, value: Any) -> Any:
        return task_list(value)

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: str | list[str]) -> str | list[str]:
        if value == []:
            raise ValueError("names no test set; write none for no test evaluation, sts for the seven")
        return value if isinstance(value, str) else [run_test_task(entry) for entry in value]

    @property
    def task_entries(self) -> list[str]:
        """The entries of ``tasks`` as a list: ``sts`` (the protocol's seven), STS task names and pair sources."""
        if isinstance(self.tasks, list):
            return self.tasks
        return ["sts"] if self.tasks == "sts" else []

    @field_validator("onednn", mode="before")
    @classmethod
    def _onednn_switch(cls, value: Any) -> Any:
        """``true``/``false`` (the field's boolean form before ``auto`` existed) mean ``on``/``off``."""
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    @model_validator(mode="after")
    def _one_prompt(self) -> RunConfig:
        if self.prompt is not None and self.prompt_name is not None:
            raise ValueError("give prompt or prompt_name, not both")
        return self

    @model_validator(mode="after")
    def _own_test_sets_stay_out_of_training_and_dev(self) -> RunConfig:
        """A test set of the user's that ``tasks`` scores (a pair file, a folder in the Hub's layout, a Hub dataset
        id): no stage chooses its checkpoints on it, and every stage filters its dev parts (and its scored training
        pairs, where it filters them) against it too: it is added to the stage's ``leakage_against`` where missing,
        so the saved config and the record say so."""
        own = {_resolved(entry): entry for entry in self.task_entries if entry != "sts" and entry not in SEVEN_TASKS}
        if not own:
            return self
        for index, stage in enumerate(self.stages):
            for entry in [] if stage.dev == "none" else dev_entries(stage.dev):
                if _resolved(entry) in own:
                    raise ValueError(
                        f"stage {stage.name!r}: dev {entry!r} is one of the run's test sets (tasks), so checkpoints "
                        "would be chosen on the scores the run reports; name another dev set"
                    )
            listed = {_resolved(file) for file in stage.data.leakage_against}
            missing = [entry for path, entry in own.items() if path not in listed]
            if missing:
                data = stage.data.model_copy(update={"leakage_against": [*stage.data.leakage_against, *missing]})
                self.stages[index] = stage.model_copy(update={"data": data})
        return self


def _resolved(entry: str) -> Path | str:
    """A test set as one key, however it is written: a local path resolved, a Hub dataset id as it is."""
    return config_path(entry) if is_local(entry) else entry


def is_test_set(entry: str) -> bool:
    """Whether ``entry`` names a test set of the user's: a pair file, a folder in the Hub's file layout, or a Hub
    dataset id (owner/name)."""
    if Path(entry).suffix.lower() in PAIR_FILE_SUFFIXES:
        return True
    return Path(entry).expanduser().is_dir() if is_local(entry) else "/" in entry


def _set_dotted(raw: dict[str, Any], dotted: str, value: Any, given_as: str = "--set") -> None:
    """Set ``raw[a][b][0][c] = value`` for ``dotted = "a.b.0.c"``; a bad path is one clear error."""
    target: Any = raw
    *parents, leaf = dotted.split(".")
    for depth, key in enumerate([*parents, leaf]):
        where = ".".join([*parents, leaf][: depth + 1])
        if isinstance(target, list):
            if not key.isdigit() or int(key) >= len(target):
                raise PcctuneError(f"{given_as} {dotted}: {where} is not an index of a list of {len(target)}")
            if depth == len(parents):
                target[int(key)] = value
            else:
                target = target[int(key)]
        elif isinstance(target, dict):
            if depth == len(parents):
                target[key] = value
            else:
                target = target.setdefault(key, {})
        else:
            raise PcctuneError(f"{given_as} {dotted}: {where} is inside a value, not a section")


def run_test_task(entry: str) -> str:
    """A run's test set as ``tasks`` names it: ``sts``, an STS task (its name in any case, or its short name:
    ``sts-b`` is ``STSBenchmark``), or your own pair file or Hub dataset id, as given; a transfer task, scored by
    ``pcctune eval``, and an unknown word refused."""
    name = task_name(entry)
    if name == "sts" or name in SEVEN_TASKS:
        return name
    if name in TRANSFER_TASKS or name in TASK_GROUPS:  # sts is taken above: the groups left hold transfer tasks
        raise ValueError(
            f"{entry!r}: a run's test evaluation scores STS tasks and your own pair sets; score the transfer tasks "
            f"with pcctune eval MODEL --tasks {name}"
        )
    if not is_local(entry) and "/" not in entry:
        raise ValueError(
            f"unknown test task {entry!r}: name sts, none, tasks of {', '.join(SEVEN_TASKS)}, or your own test "
            f"pair files (.csv/.tsv/.jsonl) or Hub dataset ids (owner/name){closest(entry, SEVEN_TASKS)}"
        )
    return entry


def task_list(value: Any) -> Any:
    """``tasks: "STS12,my_test.csv"`` is the list it names (``sts`` and ``none`` stay as they are)."""
    if isinstance(value, str) and value not in ("sts", "none"):
        return [entry.strip() for entry in value.split(",") if entry.strip()]
    return value


def _is_path(entry: Any, folder: Path) -> bool:
    """Whether a config's entry names a local file or folder (a pair file, ``./…``, ``~/…``, or a path that exists
    under ``folder``) rather than a built-in set, a task name or a Hub dataset id."""
    if not isinstance(entry, str) or entry in ("sts", "none") or entry in SEVEN_TASKS:
        return False
    named = Path(entry).suffix.lower() in PAIR_FILE_SUFFIXES or entry.startswith(PATH_PREFIXES)
    return named or (folder / entry).exists()


def _paths_from(raw: dict[str, Any], folder: Path) -> None:
    """Write the data files ``raw`` names, where relative, as taken from ``folder`` (``pcctune.paths.config_path``):
    each stage's ``data.path``, ``data.leakage_against`` and ``dev`` files, and the pair files of ``tasks``. The
    model and ``output_dir`` stay as written, relative to the working folder."""

    def resolved(entries: Any) -> Any:
        if isinstance(entries, list):
            return [resolved(entry) for entry in entries]
        return str(config_path(entries, folder)) if _is_path(entries, folder) else entries

    if "tasks" in raw:
        raw["tasks"] = resolved(task_list(raw["tasks"]))
    stages = raw.get("stages")
    for stage in [stage for stage in stages if isinstance(stage, dict)] if isinstance(stages, list) else []:
        if "dev" in stage:
            stage["dev"] = resolved(stage["dev"])
        data = stage.get("data")
        if isinstance(data, dict):
            if isinstance(data.get("path"), str):
                data["path"] = str(config_path(data["path"], folder))
            if "leakage_against" in data:
                data["leakage_against"] = resolved(data["leakage_against"])


def load_config(
    path: str | Path,
    overrides: dict[str, Any] | None = None,
    given_as: str = "--set",
    flags: dict[str, str] | None = None,
    in_place: bool = True,
) -> RunConfig:
    """Read a YAML run config; ``overrides`` (dotted keys) win over the file. The data files it names are read
    where the file stands (``in_place``; false: from the working folder, as for a run folder's own ``config.yaml``).
    An override the config refuses is named as the user gave it: by its own option where ``flags`` maps its key to
    one (``tasks`` → ``--tasks``), else as ``given_as`` and its key (``--set``, or a search space); an override's
    relative path is read from the working folder."""
    path = Path(path)
    raw = read_yaml(path, "config file") or {}
    if not isinstance(raw, dict):
        raise PcctuneError(f"{path}: a run config is a YAML mapping (model:, stages:, …), found {type(raw).__name__}")
    if in_place:
        _paths_from(raw, path.parent)
    for dotted, value in (overrides or {}).items():
        _set_dotted(raw, dotted, value, given_as)
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as error:
        where, message = first_refusal(error, RunConfig)
        where = where or "config"
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        given = next((key for key in overrides or {} if where == key or where.startswith(key + ".")), None)
        named = None if given is None else (flags or {}).get(given, f"{given_as} {given}")
        source = f"{path}: {where}" if named is None else named + ("" if where == given else f": {where}")
        raise PcctuneError(f"{source}: {message}{more}") from None


# Settings that change what a run computes; the others (where it writes, how often it logs) may
# differ between a run and its resumption. After a stage stopped on a non-finite loss, its optimisation
# settings may change too (training/health.py): the recovery fingerprint leaves them out.
NOT_RUN_DEFINING = {"output_dir", "report_to", "dequantized_cache_mb"}
STAGE_NOT_RUN_DEFINING = {"logging_steps", "save_every_minutes"}
RECOVERY_SETTINGS = {"learning_rate", "warmup_ratio", "on_nonfinite"}


def config_fingerprint(config: RunConfig, recovery: bool = False) -> str:
    """sha256 of the run-defining settings: a resumed run must match the run it continues (``recovery``:
    without the settings a stage stopped on a non-finite loss may change)."""
    payload = config.model_dump(mode="json", exclude=NOT_RUN_DEFINING)
    for stage in payload["stages"]:
        for key in STAGE_NOT_RUN_DEFINING | (RECOVERY_SETTINGS if recovery else set()):
            stage.pop(key, None)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def dump_config(config: RunConfig, path: str | Path) -> Path:
    """Write ``config`` as YAML (atomically), exactly as it will run."""
    return write_yaml(config.model_dump(mode="json"), path)
