"""``pcctune compare --bootstrap`` of a QLoRA run trained with two final-stage variants: each model is loaded and
scored as the run's own test evaluations were (its adapter on the 16-bit base, in bf16, under the run's protocol), so
the bootstrap's A and B are the run's own numbers; loading the saved folder as a plain model (its 4-bit base, in
fp32) gives other numbers."""

from __future__ import annotations

import shutil

import pytest

from pcctune.correlation import correlation
from pcctune.errors import PcctuneError
from pcctune.evaluation.protocols import load_protocol_tasks
from pcctune.evaluation.sts import task_cosines
from pcctune.modeling.build import build_model
from pcctune.modeling.quantization import linear_4bit_layers
from pcctune.orchestration.compare_models import compare_models
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.results import CompareResult, RunResult
from pcctune.training.config import RunConfig
from tests.conftest import pairs_jsonl, run_cli

pytest.importorskip("bitsandbytes")  # installed by the test extra; skip only where a user removed it

VARIANTS = ("pearson", "cosine_mse")


@pytest.fixture(scope="module")
def qlora_run(tiny_llama, shared_senteval, tmp_path_factory):
    """A one-stage QLoRA run of a tiny Llama, trained with ``--compare pearson,cosine_mse``, evaluated in bf16."""
    folder = tmp_path_factory.mktemp("qlora-compare")
    config = RunConfig.model_validate(
        {
            "model": str(tiny_llama),
            "template": "eol",
            "data_dir": str(shared_senteval),
            "output_dir": str(folder / "run"),
            "seed": 3,
            "evaluate_before": False,
            "eval_dtype": "bf16",
            "adapter": {"kind": "qlora", "r": 4, "alpha": 8},
            "stages": [
                {
                    "name": "pcc",
                    "loss": "pearson",
                    "data": {"source": "pairs", "path": str(pairs_jsonl(folder / "pairs.jsonl"))},
                    "batch_size": 8,
                    "max_steps": 1,
                    "learning_rate": 5e-2,
                    "dev": "none",
                }
            ],
        }
    )
    record = run_pipeline(config, compare=list(VARIANTS))
    return record, folder / "run"


def test_the_bootstrap_scores_each_variant_as_the_run_did(qlora_run, shared_senteval, tmp_path, capsys):
    record, run = qlora_run
    assert record.eval_precision == "16bit"
    out = tmp_path / "c.json"
    args = ["compare", str(run), str(run), "--bootstrap", "--data", str(shared_senteval), "--resamples", "100"]
    args += ["--variant-a", VARIANTS[0], "--variant-b", VARIANTS[1], "--output", str(out)]
    code, printed = run_cli(args, capsys)
    assert code == 0, printed
    compared = CompareResult.from_disk(out)
    own_a, own_b = (record.sts_by_stage[f"pcc-{loss}"] for loss in VARIANTS)
    assert set(compared.mean_a) == set(own_a) and compared.protocol == record.protocol
    assert compared.mean_a == pytest.approx(own_a, abs=1e-3) and compared.mean_b == pytest.approx(own_b, abs=1e-3)
    assert compared.b == [str(run / "stage1-pcc-cosine_mse" / "final")]
    # the saved folder loaded as a plain model sits on its 4-bit base, in fp32: not how the run scored it
    plain = build_model(compared.a[0])
    assert linear_4bit_layers(plain)
    tasks = load_protocol_tasks(shared_senteval, record.protocol)
    cosines = task_cosines(plain, tasks)
    naive = {task.name: correlation(*pair).spearman * 100 for task, pair in zip(tasks, cosines, strict=True)}
    assert any(abs(naive[name] - own_a[name]) > 1e-3 for name in naive)


def test_a_run_is_refused_where_its_test_files_or_variant_are_unknown(qlora_run, shared_senteval, tmp_path):
    record, run = qlora_run
    other = shutil.copytree(shared_senteval, tmp_path / "senteval")
    gold = other / "downstream" / "STS" / "STS12-en-test" / "STS.gs.alpha.txt"
    gold.write_text(gold.read_text().replace("4.0", "3.0"))
    changed = r"the run scored other test pairs than .* \(downstream/STS/STS12-en-test/STS.gs.alpha.txt\)"
    with pytest.raises(PcctuneError, match=changed):
        compare_models(run, run, other, variant_a="pearson", variant_b="pearson")
    for task in ("STS13-en-test", "STS14-en-test", "STS15-en-test"):  # many files differ: three named, one line
        gold = other / "downstream" / "STS" / task / "STS.gs.alpha.txt"
        gold.write_text(gold.read_text().replace("4.0", "3.0"))
    with pytest.raises(PcctuneError, match=r"STS.gs.alpha.txt, .*, .* and \d+ more\); give the folder") as refused:
        compare_models(run, run, other, variant_a="pearson", variant_b="pearson")
    assert len(str(refused.value)) < 400
    with pytest.raises(PcctuneError, match="2 final-stage variants .pcc-pearson, pcc-cosine_mse.; name the one"):
        compare_models(run, run, shared_senteval)
    assert RunResult.from_disk(run / "results.json") == record
