"""Loss names: the registry's clear names, the earlier ones kept with a warning, the guide's generated tables, and
the claims the guide makes about sentence-transformers' counterparts."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from sentence_transformers.sentence_transformer import losses as st_losses

from pcctune.losses import InfoNCELoss
from pcctune.losses.mlm import AuxiliaryMLMLoss
from pcctune.losses.pearson_by_source import SourcePearsonLoss
from pcctune.losses.registry import LOSSES, RENAMED, loss_spec, losses_markdown, renamed_markdown, resolve_loss
from pcctune.losses.regression import PENALTIES, RegressionLoss
from pcctune.modeling.build import build_model
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.training.config import RunConfig, StageConfig
from pcctune.training.losses import build_loss
from tests.conftest import SENTENCES, pairs_jsonl, tiny_run

ROOT = Path(__file__).resolve().parents[1]


def _stage(loss: str) -> dict:
    return {"name": "s", "loss": loss, "data": {"source": "stage2"}, "dev": "none", "max_steps": 1}


def test_no_registry_name_is_one_sentence_transformers_uses_for_another_loss():
    assert not {"contrastive", "ce", "mse", "l1"} & set(LOSSES)
    assert set(RENAMED.values()) <= set(LOSSES) and not set(RENAMED) & set(LOSSES)


@pytest.mark.parametrize(("old", "new"), list(RENAMED.items()))
def test_an_earlier_name_validates_as_its_new_one_with_a_warning(old, new):
    with pytest.warns(FutureWarning, match=f"loss '{old}' is now called '{new}'"):
        stage = StageConfig.model_validate(_stage(old))
    assert stage.loss == new and loss_spec(old) is loss_spec(new) is LOSSES[new]


def test_a_current_name_gives_no_warning_and_an_unknown_one_lists_the_names(recwarn):
    assert StageConfig.model_validate(_stage("infonce_positives")).loss == "infonce_positives"
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]
    with pytest.raises(ValueError, match="unknown loss 'contrastiv'; choose from infonce, pearson"):
        resolve_loss("contrastiv")
    with pytest.raises(ValueError, match="; did you mean `pearson`\\?$"):  # a typo: the name it is closest to
        resolve_loss("pearsn")
    with pytest.raises(ValueError, match="regression_mse, .*[a-z]$"):  # nothing close: no guess
        resolve_loss("zzz")


def test_every_regression_name_selects_its_penalty(tiny_bert):
    model = build_model(str(tiny_bert), device="cpu")
    regression = {name: spec.variant for name, spec in LOSSES.items() if spec.cls is RegressionLoss}
    assert sorted(regression.values()) == sorted(PENALTIES)
    for name, penalty in regression.items():
        stage = StageConfig.model_validate(_stage(name))
        loss = build_loss(stage, model, None)
        assert isinstance(loss, RegressionLoss) and loss.penalty_name == penalty


def test_old_names_build_the_same_losses_when_a_stage_is_copied_without_validation(tiny_bert):
    """``--compare`` copies the last stage with each loss as given, so an earlier name reaches the builder."""
    model = build_model(str(tiny_bert), device="cpu")
    stage = StageConfig.model_validate(_stage("pearson"))
    mse = build_loss(stage.model_copy(update={"loss": "mse"}), model, None)
    assert isinstance(mse, RegressionLoss) and mse.penalty_name == "mse"
    softmax = build_loss(stage.model_copy(update={"loss": "ce"}), model, None, top_score=3.0)
    assert isinstance(softmax, st_losses.SoftmaxLoss) and softmax.num_labels == 4
    assert isinstance(build_loss(stage.model_copy(update={"loss": "contrastive"}), model, None), InfoNCELoss)


def test_pearson_mse_divides_the_gold_by_its_sets_largest_score(tiny_bert):
    """Its MSE term is cosine-MSE's, whose labels are the scores ÷ the set's largest: 0–1 data is not read as 0–5."""
    model = build_model(str(tiny_bert), device="cpu")
    stage = StageConfig.model_validate(_stage("pearson_mse"))
    assert build_loss(stage, model, None, top_score=1.0).max_gold == 1.0
    assert build_loss(stage, model, None, top_score=5.0).max_gold == 5.0


def test_a_config_with_an_earlier_name_trains_under_the_new_one(tiny_bert, shared_senteval, tmp_path):
    pairs = pairs_jsonl(tmp_path / "p.jsonl", 16)
    config = tiny_run(tiny_bert, shared_senteval, pairs, tmp_path / "run", loss="ce", max_steps=2, dev="none")
    with pytest.warns(FutureWarning, match="loss 'ce' is now called 'softmax_classifier'"):
        run = RunConfig.model_validate(config)
    record = run_pipeline(run)
    assert [stage.loss for stage in record.stages] == ["softmax_classifier"]
    assert record.config["stages"][0]["loss"] == "softmax_classifier"


@pytest.mark.parametrize("with_negatives", [True, False])
def test_infonce_is_multiple_negatives_ranking_loss_at_scale_one_over_tau(tiny_bert, with_negatives):
    """The guide's claim: ``infonce`` (and ``infonce_positives``, without negatives) is sentence-transformers'
    ``MultipleNegativesRankingLoss`` with ``scale = 1/τ``, cosine similarity, one process."""
    model = build_model(str(tiny_bert), device="cpu")
    model.eval()
    columns = [SENTENCES[:6], SENTENCES[3:9]] + ([SENTENCES[6:12]] if with_negatives else [])
    features = [model.preprocess(column) for column in columns]
    ours = InfoNCELoss(model, temperature=0.05)(features, None)
    theirs = st_losses.MultipleNegativesRankingLoss(model, scale=1 / 0.05)(features, torch.empty(0))
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-5)


def test_the_loss_guide_holds_the_registrys_tables_as_its_generator_writes_them(tmp_path):
    page = (ROOT / "docs" / "losses.md").read_text(encoding="utf-8")
    assert losses_markdown() in page and renamed_markdown() in page
    copy = tmp_path / "losses.md"
    copy.write_text(page.replace(losses_markdown(), "| stale |"), encoding="utf-8")
    subprocess.run([sys.executable, str(ROOT / "docs" / "gen_losses.py"), str(copy)], check=True)
    assert copy.read_text(encoding="utf-8") == page


def test_the_guide_is_in_the_site_and_the_other_pages_link_to_it_instead_of_a_table():
    assert "losses.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in ("training.md", "regression.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert "losses.md" in text
        assert "| `pearson` |" not in text and "| loss |" not in text and "| `loss:` |" not in text, page


OWN_LOSSES = sorted({spec.cls for spec in LOSSES.values() if spec.cls.__module__.startswith("pcctune.")}, key=str)


def _example(cls: type) -> str:
    """The code of the Examples block of ``cls``'s docstring."""
    examples = (inspect.getdoc(cls) or "").split("\nExamples:\n", 1)[1]
    return textwrap.dedent(examples.split("```python\n", 1)[1].split("```", 1)[0])


@pytest.mark.parametrize("cls", [*OWN_LOSSES, AuxiliaryMLMLoss], ids=lambda cls: cls.__name__)
def test_each_of_our_losses_documents_every_argument_its_inputs_and_an_example(cls):
    """sentence-transformers' loss docstring shape: Args (every constructor argument), Inputs, Examples."""
    doc = inspect.getdoc(cls) or ""
    assert "\nArgs:\n" in doc and "\nInputs: " in doc and "\nExamples:\n" in doc, cls.__name__
    args = doc.split("\nArgs:\n", 1)[1].split("\n\n", 1)[0]
    documented = {line.split(":", 1)[0].strip() for line in args.splitlines() if not line.startswith("        ")}
    parameters = set(inspect.signature(cls.__init__).parameters) - {"self"}
    assert documented == parameters, cls.__name__
    assert f"{cls.__name__}(" in _example(cls), cls.__name__


@pytest.mark.parametrize("cls", OWN_LOSSES, ids=lambda cls: cls.__name__)
def test_each_of_our_losses_trains_a_step_as_its_docstring_example_writes(cls, tiny_bert, tmp_path):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    count = 6
    first, second = SENTENCES[:count], SENTENCES[count : 2 * count]
    scored = {"sentence1": first, "sentence2": second, "score": [float(i) for i in range(count)]}
    if cls is SourcePearsonLoss:
        scored["source"] = [i % 2 for i in range(count)]
    namespace = {
        "model": build_model(str(tiny_bert), device="cpu"),
        "pairs": Dataset.from_dict(scored),
        "triplets": Dataset.from_dict({"anchor": first, "positive": second, "negative": SENTENCES[3 : 3 + count]}),
        "preferences": Dataset.from_dict({"x1": first, "x2": second, "x3": second[::-1], "x4": first[::-1]}),
        "args": SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path),
            max_steps=1,
            per_device_train_batch_size=count,
            save_strategy="no",
            report_to=[],
            disable_tqdm=True,
            use_cpu=True,
        ),
        "SentenceTransformerTrainer": SentenceTransformerTrainer,
        cls.__name__: cls,
    }
    exec(_example(cls), namespace)
    trainer = namespace["trainer"]
    trainer.train()
    assert isinstance(trainer.loss, cls) and trainer.state.global_step == 1
    assert math.isfinite(trainer.state.log_history[-1]["train_loss"])
