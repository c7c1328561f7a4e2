"""The pcctune section of a saved model's card (``README.md``), after sentence-transformers' own.

sentence-transformers writes a model card when a model is saved; a run adds what a reader of the
Hub page needs to trust and reuse the model: the run config and its stages, the stage-2 data and
its leakage report (pairs removed per test set), the STS scores with the protocol named, the
library versions, and how to load the model. The section is replaced, not appended twice, when
a card is written again.

A card is meant for the Hub: it names the base model as a Hub id (``base_model``, which sentence-transformers also
writes into the card's metadata), links only to pages of pcctune's repository, and holds no absolute local path
(the data folder, a local base model's folder or the run folder show as their last part).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub.repocard import metadata_load
from sentence_transformers import SentenceTransformer

from pcctune.data.leakage import LEVELS
from pcctune.evaluation.tables import ScoreTable
from pcctune.io import write_text
from pcctune.modeling.registry import PACKAGED_MODELS, packaged_key
from pcctune.results import RunResult

CARD_MARKER = "<!-- pcctune -->"
LOADING = "### Loading"
REPOSITORY = "https://github.com/pcctune/pcctune"  # pyproject.toml's [project.urls] Repository (a test checks)


def docs_page(page: str) -> str:
    """The address of a page of pcctune's documentation (``docs/PAGE`` in the repository)."""
    return f"{REPOSITORY}/blob/main/docs/{page}"


def base_model_id(spec: str) -> str | None:
    """The Hub id of the model ``spec`` names (a run config's ``model``): a packaged model's, a Hub id as given, or
    the ``base_model`` a local folder's own card names; ``None`` for a GGUF file or a folder whose card names none."""
    key = packaged_key(spec)
    if key is not None:
        return PACKAGED_MODELS[key].hub_id
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        return None
    if path.is_dir():
        card = path / "README.md"
        base = (metadata_load(card) or {}).get("base_model") if card.is_file() else None
        return base if isinstance(base, str) else None
    return None if path.exists() else spec


def name_base_model(model: SentenceTransformer, spec: str) -> None:
    """Set ``model``'s card data to the base model ``spec`` names, so the card sentence-transformers writes when
    the model is saved names it (sentence-transformers itself looks the model's folder up on the Hub, which finds
    nothing for a packaged model or offline)."""
    base = base_model_id(spec)
    if base is not None:
        model.model_card_data.base_model = base


def shown_path(path: str | Path) -> str:
    """``path`` as a card shows it: relative as given, under the working directory relative to it, otherwise its
    last three parts (``RUN/stage1-pcc/final``), so that no absolute local path reaches a card."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    if path.is_relative_to(Path.cwd()):
        return path.relative_to(Path.cwd()).as_posix()
    return Path(*path.parts[-3:]).as_posix()


def portable(value: Any) -> Any:
    """A config value with every absolute local path shortened to its last part (``…/my_data``)."""
    if isinstance(value, dict):
        return {key: portable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [portable(item) for item in value]
    if isinstance(value, str) and (value.startswith("~") or Path(value).is_absolute()):
        return f"…/{Path(value).name}"
    return value


def _base_model_line(spec: str) -> str:
    base = base_model_id(spec)
    if base is None:
        return f"Base model: `{portable(spec)}` (a local model)."
    return f"Base model: [{base}](https://huggingface.co/{base})."


def _leakage_lines(report: dict[str, Any] | None) -> list[str]:
    if report is None:
        return ["No stage trained on the filtered STS-B + SICK-R set."]
    lines = [
        f"Stage-2 set: {report['total_kept']} pairs (STS-B train + SICK-R train, leakage filter at level "
        f"`{report['level']}`, SICK rescaled: {report['rescale_sick']}), filtered against "
        + ", ".join(report["test_sets"])
        + ". Pairs each level would remove:",
        "",
        "| source | pairs | kept | " + " | ".join(f"removed at `{level}`" for level in LEVELS) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in LEVELS) + " |",
    ]
    for source in report["sources"]:
        removed = " | ".join(str(source["removed"][level]) for level in LEVELS)
        kept = report["kept_by_source"][source["source"]]
        lines.append(f"| {source['source']} | {source['total']} | {kept} | {removed} |")
    return lines


def _selection_lines(result: RunResult) -> list[str]:
    """Per stage: the dev parts that chose its checkpoint (pairs kept by the leakage filter) and the filter itself."""
    lines = []
    for stage in result.stages:
        dev = ", ".join(f"`{part}` ({pairs} pairs)" for part, pairs in stage.dev_pairs.items()) or "none"
        line = f"- `{stage.stage}`: checkpoint chosen on {dev}"
        filter_ = stage.leakage_filter
        if filter_:
            line += f"; training and dev pairs filtered at level `{filter_['level']}`"
            if filter_["against"]:
                against = ", ".join(f"`{name}`" for name in filter_["against"])
                line += f", also against your test files {against} ({filter_['removed']} training pairs removed)"
        lines.append(line + ".")
    return lines


def _stages_table(result: RunResult) -> str:
    if not result.stages:
        return "Every stage finished in an earlier run."
    dev = "best dev (Spearman × 100)"
    table = ScoreTable("stages", ["loss", "train examples", dev, "wall s"], first_column="stage")
    for stage in result.stages:
        best = stage.best_dev_spearman  # the dev evaluator's fraction in [−1, 1], shown on the test scores' scale
        table.rows.append(
            (
                stage.stage,
                {
                    "loss": stage.loss,
                    "train examples": stage.train_examples,
                    dev: None if best is None else best * 100,
                    "wall s": stage.wall_time_s,
                },
            )
        )
    return table.to_markdown()


def _backends(folder: Path) -> list[str]:
    exported = [name for name in ("onnx", "openvino") if (folder / name).is_dir()]
    if not exported:
        return []
    return [
        "",
        f"Exported backbones: {', '.join(exported)} (sentence-transformers' layout): "
        f'`SentenceTransformer(path, backend="{exported[0]}")` where optimum is installed, or '
        f"`pcctune eval PATH --backend {exported[0]}`.",
    ]


def _loading(folder: Path) -> list[str]:
    """How to load the folder: plain sentence-transformers, or (for what ST cannot express) with pcctune."""
    types = [module["type"] for module in json.loads((folder / "modules.json").read_text(encoding="utf-8"))]
    shown = shown_path(folder)
    if all(t.startswith("sentence_transformers.") for t in types):
        return [
            "```python",
            "from sentence_transformers import SentenceTransformer",
            "",
            f'model = SentenceTransformer("{shown}")  # plain sentence-transformers: pcctune is not needed',
            "```",
            "",
            "The prompt template, if any, is the tokenizer's chat template: sentence-transformers applies it.",
            *_backends(folder),
        ]
    return [
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "",
        f'model = SentenceTransformer("{shown}", trust_remote_code=True)  # needs: pip install pcctune',
        "```",
        "",
        "**This model needs pcctune installed** (`pip install pcctune`): its input module "
        f"(`{types[0]}`) does what sentence-transformers cannot express (deep continuous prompts, a "
        "sentence cut-off or a 4-bit backbone). Without pcctune, loading fails naming that module. "
        "`pcctune export --merge` writes a LoRA / QLoRA model as one full-precision model that loads anywhere.",
    ]


def _pairs(result: RunResult) -> str:
    if not result.pairs_by_task:
        return ""
    return ", on " + ", ".join(f"{task} {pairs}" for task, pairs in result.pairs_by_task.items()) + " test pairs"


def pcctune_section(result: RunResult, stage_label: str, leakage: dict[str, Any] | None, folder: Path) -> str:
    """Markdown for the model trained up to ``stage_label`` of the run ``result``."""
    sts = {label: scores for label, scores in result.sts_by_stage.items() if label in ("before", stage_label)}
    parts = [
        CARD_MARKER,
        "## pcctune",
        "",
        f"Trained with [pcctune]({REPOSITORY}) (Pcc-tuning: contrastive stage 1, Pearson stage 2). This folder is "
        f"stage `{stage_label}` of the run. {_base_model_line(str(result.config.get('model', '')))}",
        "",
        "### STS evaluation",
        "",
        f"Spearman × 100 of cosine similarity, protocol `{result.protocol}` "
        f"([evaluation protocols]({docs_page('evaluation.md')})){_pairs(result)}.",
        "",
        ScoreTable.from_rows(sts).to_markdown(deltas=True) if sts else "Not evaluated.",
        "",
        "### Stages",
        "",
        _stages_table(result),
        "",
        "### Training data and leakage",
        "",
        *_leakage_lines(leakage),
        "",
        *_selection_lines(result),
        "",
        "### Run config",
        "",
        "```yaml",
        yaml.safe_dump(portable(result.config), sort_keys=False, allow_unicode=True).strip(),
        "```",
        "",
        "### Library versions",
        "",
        ", ".join(f"{name} {version}" for name, version in result.versions.items()),
        "",
        LOADING,
        "",
        *_loading(folder),
        "",
    ]
    return "\n".join(parts)


def carry_section(source: Path, target: Path) -> bool:
    """On export: copy ``source``'s pcctune card section to ``target``, its loading part written for ``target``
    (sentence-transformers regenerates its own card on save). False when ``source`` has none."""
    card = source / "README.md"
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    if CARD_MARKER not in text:
        return False
    head = (CARD_MARKER + text.split(CARD_MARKER, 1)[1]).split(LOADING)[0]
    add_pcctune_section(target, head + LOADING + "\n\n" + "\n".join(_loading(target)) + "\n")
    return True


def add_pcctune_section(folder: Path, section: str) -> Path:
    """Write ``section`` into ``folder/README.md`` after sentence-transformers' card, replacing an earlier one."""
    card = folder / "README.md"
    existing = card.read_text(encoding="utf-8") if card.is_file() else ""
    base = existing.split(CARD_MARKER)[0].rstrip()
    return write_text(card, (base + "\n\n" if base else "") + section)
