"""Typed run configs: one YAML file describes a whole run, and the run writes it back out.

A run is a model (with template, pooling, dtype, adapter) and a list of stages. Each stage is
one sentence-transformers trainer run: data, loss, batch, optimisation, dev set, output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pcctune.errors import PcctuneError
from pcctune.modeling.template import Template


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AdapterConfig(Strict):
    """LoRA / QLoRA (QLoRA needs CUDA and bitsandbytes), or DCPCSE's continuous prompts on a frozen backbone."""

    kind: Literal["none", "lora", "qlora", "deep_prompt", "shallow_prompt"] = "none"
    r: int = 8
    alpha: int = 16
    dropout: float = 0.05
    targets: list[str] | Literal["all-linear"] = "all-linear"
    prompt_length: int = 16
    prompt_projection: bool = False
    offset_positions: bool = True
    prompt_init_text: str = "This sentence means"

    def prompt_kwargs(self) -> dict | None:
        """Arguments of :class:`~pcctune.modeling.prefix.PromptedTransformer`, or ``None`` for other kinds."""
        if self.kind not in ("deep_prompt", "shallow_prompt"):
            return None
        return {"prompt_kind": self.kind.split("_")[0], "prompt_length": self.prompt_length,
                "prompt_projection": self.prompt_projection, "offset_positions": self.offset_positions,
                "prompt_init_text": self.prompt_init_text}


class DataConfig(Strict):
    """Training data of one stage.

    - ``stage2``: STS-B train + SICK-R train filtered against every test set (Pcc-tuning App. B);
    - ``pairs``: a csv/tsv/jsonl file of sentence1, sentence2, score;
    - ``simcse_csv``: SimCSE's NLI csv (sent0, sent1, hard_neg);
    - ``snli``: (premise, entailment, contradiction) from an SNLI-format folder (``splits``);
    - ``snli_regression``: SNLI pairs scored contradiction 0, neutral 1, entailment 2 (regression §4.1).
    """

    source: Literal["stage2", "pairs", "simcse_csv", "snli", "snli_regression"]
    path: str | None = None
    splits: list[str] = ["dev", "test"]
    rescale_sick: bool = False
    normalization: Literal["exact", "whitespace", "case", "whitespace+case"] = "exact"
    limit: int | None = Field(default=None, description="use only the first N examples (quick runs)")


class RegressionConfig(Strict):
    """Head and penalty of the regression losses (Translated ReLU, Smooth K2, L1, MSE)."""

    k: float = 2.0
    x0: float = 0.25
    concat: Literal["uv", "absdiff", "uv_absdiff"] = "uv_absdiff"
    label_range: list[float] | None = Field(None, description="clip predictions into [low, high]")
    head_warmup: Literal["none", "nli"] = Field(
        "none", description="step 1 of the two-step recipe: fit the head on NLI (0/1/2) with the encoder frozen"
    )


class DPOConfig(Strict):
    """Embedding DPO (PromptEOL §3.3): preference model, preference sampling and β."""

    beta: float = 0.1
    preference_model: str | None = Field(None, description="a trained cross-encoder; None trains one")
    preference_base: str = Field("all-MiniLM-L6-v2", description="backbone of the cross-encoder pcctune trains")
    preference_epochs: float = 1.0
    candidates: Literal["stage2", "snli"] = "stage2"
    count: int = 2000
    margin: float = 0.1
    mode: Literal["anchor", "random"] = "random"


class MLMConfig(Strict):
    """DCPCSE's auxiliary MLM term, λ = initial_weight · decay_rate^(step / decay_steps)."""

    enabled: bool = False
    initial_weight: float = 0.1
    decay_rate: float = 0.95
    decay_steps: int = 100
    mask_probability: float = 0.15
    train_head: bool = False


LossName = Literal[
    "pearson", "infonce", "contrastive", "cosent", "angle", "cosine_mse", "ce",
    "l1", "mse", "translated_relu", "smooth_k2", "dpo",
]


class StageConfig(Strict):
    name: str
    loss: LossName
    data: DataConfig
    regression: RegressionConfig = RegressionConfig()
    dpo: DPOConfig = DPOConfig()
    mlm: MLMConfig = MLMConfig()
    batch_size: int = Field(64, description="global batch: the Pearson group or the InfoNCE candidate pool")
    mini_batch_size: int | None = Field(None, description="GradCache mini-batch; bounds memory")
    gradient_accumulation_steps: int = Field(1, description="translated into mini-batches, never splits a group")
    learning_rate: float = 2e-5
    epochs: float = 1.0
    max_steps: int = -1
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    temperature: float = 0.05
    contrastive_threshold: float = Field(4.0, description="score above which a pair is a positive (loss=contrastive)")
    max_seq_length: int | None = None
    dev: Literal["sick-trial", "stsb-dev-filtered", "none"] = "sick-trial"
    eval_steps: int = 50
    logging_steps: int = 10
    bf16: bool = False


class RunConfig(Strict):
    model: str
    template: str | None = None
    pooling: Literal["mean", "cls", "lasttoken"] | None = None
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    eval_dtype: Literal["fp32", "bf16"] = Field(
        "fp32", description="weights of the STS evaluations (see docs/training.md for when bf16 is faster)"
    )
    adapter: AdapterConfig = AdapterConfig()
    seed: int = 42
    data_dir: str | None = None
    output_dir: str = "runs/run"
    evaluate_before: bool = True
    evaluate_after_each_stage: bool = True
    stages: list[StageConfig]

    @field_validator("template")
    @classmethod
    def _valid_template(cls, value: str | None) -> str | None:
        return None if value is None else Template.parse(value).text


def load_config(path: str | Path, overrides: dict | None = None) -> RunConfig:
    """Read a YAML run config; ``overrides`` (dotted keys) win over the file."""
    path = Path(path)
    if not path.is_file():
        raise PcctuneError(f"missing config file: {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise PcctuneError(f"{path}: invalid YAML ({str(error).splitlines()[0]})") from None
    for dotted, value in (overrides or {}).items():
        target = raw
        *parents, leaf = dotted.split(".")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        target[leaf] = value
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PcctuneError(f"{path}: {where}: {first['msg']}") from None


def dump_config(config: RunConfig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config.model_dump(), sort_keys=False), encoding="utf-8")
    return path
