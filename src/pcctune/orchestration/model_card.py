"""The pcctune section of a saved model's card (``README.md``), after sentence-transformers' own.

sentence-transformers writes a model card when a model is saved; a run adds what a reader of the
Hub page needs to trust and reuse the model: the run config's fields that differ from the defaults (the whole
config saved beside the model), its stages, the stage-2 data and its leakage report (pairs removed per test set),
the STS scores with the protocol named, the library versions, and how to load the model. The section is replaced,
not appended twice, when a card is written again.

A card is meant for the Hub: it names the base model as a Hub id (``base_model``, which sentence-transformers also
writes into the card's metadata), loads the model by the folder's path or, once pushed, by its Hub id (never
sentence-transformers' placeholder id), shows every score × 100, links to no repository address (none is
published) and holds no absolute local path (the data folder, a local base model's folder or the run folder show
as their last part).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub.repocard import metadata_load
from sentence_transformers import SentenceTransformer

from pcctune.data.leakage import LEVELS
from pcctune.evaluation.tables import ScoreTable
from pcctune.io import write_text, write_yaml
from pcctune.modeling.registry import PACKAGED_MODELS, packaged_key
from pcctune.modeling.saving import SENTENCE_TRANSFORMERS_CONFIG, is_native_type, module_types
from pcctune.results import RunResult
from pcctune.training.audit import leakage_summary
from pcctune.training.config import RunConfig
from pcctune.training.start import start_beaten

CARD_MARKER = "<!-- pcctune -->"
LOADING = "### Loading"
FULL_CONFIG = "pcctune_config.yaml"  # the run's whole resolved config, saved beside the model
HUB_COMMENT = "# Download from the 🤗 Hub"  # sentence-transformers' usage snippet, over its model id
ST_USAGE = re.compile(r'^model = SentenceTransformer\("[^"]*"', re.MULTILINE)


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


ROLES = {
    "train": "trained on",
    "dev": "selects checkpoints on",
    "dpo": "draws preferences from",
    "head": "first fits its regression head on",
}


def _audit_lines(result: RunResult) -> list[str]:
    """One line per source the run's ``leakage_audit`` checked before its first step (none in a record from before
    that audit), as the log says it (``leakage_summary``): its test pairs at every level, in which test sets, and
    whether the filter removed them."""
    lines = [
        f"- `{portable(entry.source)}`, which stage `{entry.stage}` {ROLES[entry.role]}: {leakage_summary(entry)}."
        for entry in result.leakage_audit
    ]
    return ["Every source checked against the test sets before the first step:", "", *lines, ""] if lines else []


def _selection_lines(result: RunResult) -> list[str]:
    """Per stage: the dev parts that chose its checkpoint (pairs kept by the leakage filter), the steps it skipped
    (``on_nonfinite: skip``) and the filter itself."""
    lines = []
    for stage in result.stages:
        dev = ", ".join(f"`{part}` ({pairs} pairs)" for part, pairs in stage.dev_pairs.items()) or "none"
        line = f"- `{stage.stage}`: checkpoint chosen on {dev}"
        if start_beaten(stage.start_dev_spearman, stage.best_dev_spearman) is False:
            line += "; no checkpoint scored above the model it started from there, so training did not help on dev"
        if stage.best_at_last_evaluation:
            line += "; the best was its last dev evaluation, so a longer schedule may score higher"
        if stage.skipped_steps:
            line += f"; {stage.skipped_steps} steps skipped for a non-finite loss or gradient (`on_nonfinite: skip`)"
        filter_ = stage.leakage_filter
        if filter_ and filter_["level"] == "none":
            line += "; training pairs kept whole (`leakage: none`)"
        elif filter_:
            line += f"; training and dev pairs filtered at level `{filter_['level']}`"
            if filter_["against"]:
                against = ", ".join(f"`{name}`" for name in filter_["against"])
                line += f", also against your test files {against} ({filter_['removed']} training pairs removed)"
        lines.append(line + ".")
    return lines


def changed_fields(config: RunConfig) -> dict[str, Any]:
    """The fields of ``config`` that differ from their defaults (nested sections and stages alike), as YAML shows
    them: what a reader needs to rerun it, the rest being pcctune's defaults."""
    return config.model_dump(mode="json", exclude_defaults=True)


def _config_lines(config: RunConfig) -> list[str]:
    return [
        f"The fields that differ from pcctune's defaults; the whole resolved config: [{FULL_CONFIG}]({FULL_CONFIG}).",
        "",
        "```yaml",
        yaml.safe_dump(portable(changed_fields(config)), sort_keys=False, allow_unicode=True).strip(),
        "```",
    ]


def _stages_table(result: RunResult) -> str:
    if not result.stages:
        return "Every stage finished in an earlier run."
    start, dev = "start dev (Spearman × 100)", "best dev (Spearman × 100)"
    table = ScoreTable("stages", ["loss", "train examples", start, dev, "wall s"], first_column="stage")
    for stage in result.stages:
        # the dev evaluator's fractions in [−1, 1], shown on the test scores' scale
        best, begun = stage.best_dev_spearman, stage.start_dev_spearman
        table.rows.append(
            (
                stage.stage,
                {
                    "loss": stage.loss,
                    "train examples": stage.train_examples,
                    start: None if begun is None else begun * 100,
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


def _loading(folder: Path, model_id: str | None = None) -> list[str]:
    """How to load the folder (by ``model_id``, default its path): plain sentence-transformers, or (for what ST
    cannot express) with pcctune."""
    types = module_types(folder)
    shown = model_id or shown_path(folder)
    if all(is_native_type(t) for t in types):
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


def _prompt_line(folder: Path) -> str:
    """What every sentence was encoded under, in training and evaluation: the saved model's default prompt
    (``config_sentence_transformers.json``), which ``model.encode`` applies too."""
    saved = folder / SENTENCE_TRANSFORMERS_CONFIG
    config = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else {}
    name = config.get("default_prompt_name")
    prompt = (config.get("prompts") or {}).get(name) if name else None
    if not prompt:
        return "Sentences were encoded without a prompt."
    return f"Every sentence was encoded, in training and evaluation, under the prompt `{name}`: {json.dumps(prompt)}."


def _pairs(result: RunResult) -> str:
    if not result.pairs_by_task:
        return ""
    return ", on " + ", ".join(f"{task} {pairs}" for task, pairs in result.pairs_by_task.items()) + " test pairs"


def pcctune_section(
    config: RunConfig, result: RunResult, stage_label: str, leakage: dict[str, Any] | None, folder: Path
) -> str:
    """Markdown for the model trained up to ``stage_label`` of the run ``result`` of ``config``."""
    sts = {label: scores for label, scores in result.sts_by_stage.items() if label in ("before", stage_label)}
    parts = [
        CARD_MARKER,
        "## pcctune",
        "",
        "Trained with pcctune (Pcc-tuning: contrastive stage 1, Pearson stage 2). This folder is "
        f"stage `{stage_label}` of the run. {_base_model_line(config.model)}",
        "",
        "### STS evaluation",
        "",
        f"Spearman × 100 of cosine similarity, protocol `{result.protocol}` (pcctune's evaluation protocols: "
        f"`docs/evaluation.md`){_pairs(result)}. {_prompt_line(folder)}",
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
        *_audit_lines(result),
        *_selection_lines(result),
        "",
        "### Run config",
        "",
        *_config_lines(config),
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


def write_card(
    folder: Path, config: RunConfig, result: RunResult, stage_label: str, leakage: dict[str, Any] | None
) -> Path:
    """The card of the model ``folder`` holds (stage ``stage_label`` of ``result``): the run's whole config saved
    beside it, and the pcctune section after sentence-transformers' card, both loading the folder by its path."""
    write_yaml(portable(result.config), folder / FULL_CONFIG)
    return add_pcctune_section(folder, pcctune_section(config, result, stage_label, leakage, folder))


def load_by(card: str, folder: Path, model_id: str | None = None) -> str:
    """The card text ``card`` of ``folder`` with both its usage snippets loading the model by ``model_id`` (a Hub
    id; default the folder's path): sentence-transformers' (whose placeholder id, and its "Download from the Hub"
    over a folder, go) and pcctune's Loading part."""
    base, marker, section = card.partition(CARD_MARKER)
    base = ST_USAGE.sub(lambda _: f'model = SentenceTransformer("{model_id or shown_path(folder)}"', base, count=1)
    if model_id is None:
        base = base.replace(HUB_COMMENT + "\n", "")
    elif HUB_COMMENT not in base:
        base = ST_USAGE.sub(lambda m: f"{HUB_COMMENT}\n{m[0]}", base, count=1)
    if LOADING in section:
        section = section.split(LOADING)[0] + LOADING + "\n\n" + "\n".join(_loading(folder, model_id)) + "\n"
    return base + marker + section


def distinct_widget(card: str) -> str:
    """``card`` with each sentence of its widget (the Hub's inference examples in its metadata, which
    sentence-transformers draws from the training rows) shown once: STS sets reuse a sentence across pairs, so the
    drawn examples repeat sentences. An example whose source sentence was shown already goes."""
    header, marker, body = card.removeprefix("---\n").partition("\n---\n")
    metadata = yaml.safe_load(header) if card.startswith("---\n") and marker else None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("widget"), list):
        return card
    seen: set[str] = set()

    def new(sentence: Any) -> bool:
        fresh = isinstance(sentence, str) and sentence not in seen
        seen.add(sentence)
        return fresh

    examples = []
    for example in metadata["widget"]:
        if "source_sentence" in example and new(example["source_sentence"]):
            sentences = [sentence for sentence in example.get("sentences", []) if new(sentence)]
            examples += [{**example, "sentences": sentences}] if sentences else []
        elif "text" in example and new(example["text"]):
            examples.append(example)
    if examples == metadata["widget"]:
        return card
    metadata["widget"] = examples
    return "---\n" + yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True) + "---\n" + body


def carry_section(source: Path, target: Path) -> bool:
    """On export: copy ``source``'s pcctune card section and whole config to ``target``, its loading part written
    for ``target`` (sentence-transformers regenerates its own card on save). False when ``source`` has none."""
    card = source / "README.md"
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    if CARD_MARKER not in text:
        return False
    if (source / FULL_CONFIG).is_file():
        write_text(target / FULL_CONFIG, (source / FULL_CONFIG).read_text(encoding="utf-8"))
    add_pcctune_section(target, CARD_MARKER + text.split(CARD_MARKER, 1)[1])
    return True


def add_pcctune_section(folder: Path, section: str) -> Path:
    """Write ``section`` into ``folder/README.md`` after sentence-transformers' card, replacing an earlier one, with
    both parts loading the model by the folder's path and each widget sentence shown once."""
    card = folder / "README.md"
    existing = card.read_text(encoding="utf-8") if card.is_file() else ""
    base = existing.split(CARD_MARKER)[0].rstrip()
    return write_text(card, distinct_widget(load_by((base + "\n\n" if base else "") + section, folder)))
