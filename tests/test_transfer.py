"""Transfer tasks: readers, splits, probe, and the pcctune eval --tasks transfer record."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

import pcctune
from pcctune.data.transfer import TRANSFER_TASKS, load_transfer_task
from pcctune.errors import PcctuneError
from pcctune.evaluation.transfer import PROBE_SEED, cross_validated_accuracy, score_transfer_task
from pcctune.modeling.build import build_model
from pcctune.orchestration.evaluate import run_eval
from tests.conftest import write_csv

PAIRS = [
    ("a man plays a guitar", "a man plays music", 4.0),
    ("a dog runs", "a cat sleeps", 0.5),
    ("two kids", "two children", 4.5),
]


def test_readers_and_splits(mini_transfer):
    tasks = {name: load_transfer_task(mini_transfer, name) for name in TRANSFER_TASKS}
    assert set(tasks["MR"].splits) == {"all"} and tasks["MR"].splits["all"][1].count(1) == 20
    assert set(tasks["SST2"].splits) == {"train", "dev", "test"}
    assert tasks["SST2"].splits["train"][0][0] == "a good red car number 0 ."
    trec_labels = tasks["TREC"].splits["train"][1] + tasks["TREC"].splits["test"][1]
    assert sorted(set(trec_labels)) == [1, 3]  # coarse classes, numbered as SentEval's trec.py: DESC 1, HUM 3
    assert isinstance(tasks["MRPC"].splits["train"][0][0], tuple)


def test_a_blank_line_of_a_binary_task_is_a_sample_as_in_senteval(mini_transfer):
    positive = mini_transfer / "downstream" / "CR" / "custrev.pos"
    positive.write_text(positive.read_text().replace("\n", "\n\n", 1) + "\n")  # one blank line inside, one at the end
    texts, labels = load_transfer_task(mini_transfer, "CR").splits["all"]
    assert len(texts) == 22 + 20 and texts[1] == texts[21] == "" and labels.count(1) == 22


def test_unknown_task_and_bad_line(mini_transfer):
    with pytest.raises(PcctuneError, match="unknown transfer task"):
        load_transfer_task(mini_transfer, "SST5")
    (mini_transfer / "downstream" / "SST" / "binary" / "sentiment-dev").write_text("no label here\n")
    with pytest.raises(PcctuneError, match="expected a 0/1 label"):
        load_transfer_task(mini_transfer, "SST2")
    (mini_transfer / "downstream" / "TREC" / "TREC_10.label").write_text("DESC:def What is it ?\nWHO:x Who ?\n")
    with pytest.raises(PcctuneError, match=r"TREC_10.label:2: unknown TREC class 'WHO'"):
        load_transfer_task(mini_transfer, "TREC")


def test_sentevals_row_order_is_word_count_then_label_and_stable():
    from pcctune.evaluation.senteval_probe import senteval_order

    texts = ["a b c", "a b", "x y", "z", "p q"]
    assert senteval_order(texts, [0, 1, 0, 1, 0]) == [3, 2, 4, 1, 0]  # ties on (2 words, label 0) keep file order
    pairs = [("a b", "c"), ("a", "b c d"), ("a", "b")]
    assert senteval_order(pairs, [1, 0, 0]) == [2, 1, 0]


def test_probe_learns_separable_features_and_not_noise():
    rng = np.random.default_rng(0)
    labels = np.array([0, 1] * 50)
    separable = rng.normal(size=(100, 5)) + labels[:, None] * 4
    assert cross_validated_accuracy(separable, labels, seed=1) == pytest.approx(1.0)
    noise = rng.normal(size=(100, 5))
    assert cross_validated_accuracy(noise, labels, seed=1) < 0.75


def test_mrpc_uses_u_v_absdiff_product(mini_transfer):
    task = load_transfer_task(mini_transfer, "MRPC")
    vectors = {}
    for pairs, _ in task.splits.values():
        for a, b in pairs:
            vectors[a] = np.ones(3) if "good" in a else np.zeros(3)
            vectors[b] = np.ones(3) if "good" in b else -np.ones(3)
    score = score_transfer_task(task, vectors)
    assert score.accuracy == pytest.approx(100.0) and score.f1 == pytest.approx(100.0)


def test_eval_transfer_record_from_the_cli_and_the_python_api(mini_transfer, tiny_bert, capsys):
    cli = run_eval(str(tiny_bert), mini_transfer, tasks="all", console=Console(quiet=True))
    assert set(cli.transfer) == {*TRANSFER_TASKS, "avg"}
    assert cli.sts is not None and all(0 <= v <= 100 for v in cli.transfer.values())
    assert any("MRPC" in path for path in cli.data_files_sha256)
    capsys.readouterr()
    api = pcctune.evaluate(build_model(str(tiny_bert)), data=mini_transfer, tasks="all")
    assert capsys.readouterr().out == ""  # a library call prints no table
    assert api.transfer == pytest.approx(cli.transfer) and api.sts == pytest.approx(cli.sts, abs=1e-6)
    assert (api.transfer_probe, api.probe_seed) == (cli.transfer_probe, cli.probe_seed) == ("sklearn", PROBE_SEED)
    assert api.data_files_sha256 == cli.data_files_sha256
    with pytest.raises(PcctuneError, match="your pairs .--pairs. replace the seven STS tasks"):
        pcctune.evaluate(build_model(str(tiny_bert)), pairs=write_csv(mini_transfer / "a.csv", PAIRS), tasks="transfer")
    some = run_eval(str(tiny_bert), mini_transfer, tasks="MR,STSBenchmark", console=Console(quiet=True))
    assert some.sts == {"STSBenchmark": cli.sts["STSBenchmark"]}  # the same score; no avg of one task
    assert some.transfer == {"MR": cli.transfer["MR"]} and not any("MRPC" in path for path in some.data_files_sha256)


def test_your_pairs_with_named_transfer_tasks(mini_transfer, tiny_bert):
    """``sts,MR`` beside your pairs: your pairs take the STS side, MR is scored too; an STS task named beside them
    is refused (they replace the seven)."""
    pairs = write_csv(mini_transfer / "a.csv", PAIRS)
    model = build_model(str(tiny_bert))
    result = pcctune.evaluate(model, pairs=pairs, tasks=["sts", "MR"])
    assert result.sts is not None and set(result.sts) == {"a"} and set(result.transfer or {}) == {"MR"}
    with pytest.raises(PcctuneError, match="replace the seven STS tasks"):
        pcctune.evaluate(model, pairs=pairs, tasks="STS12")


def test_senteval_probe_learns_separable_features_and_not_noise():
    from pcctune.evaluation.senteval_probe import LogisticRegressionProbe, ProbeSettings

    rng = np.random.default_rng(0)  # SentEval's probe is built for thousands of examples: small steps, early stop
    labels = np.array([0, 1] * 300)
    for features, accurate in (
        (rng.normal(size=(600, 5)) + (2 * labels[:, None] - 1) * 2, True),
        (rng.normal(size=(600, 5)), False),
    ):
        probe = LogisticRegressionProbe(5, 2, 1e-5, ProbeSettings())
        probe.fit(features[:500], labels[:500])
        assert (probe.score(features[500:], labels[500:]) > 0.97) == accurate


def test_senteval_probe_keeps_sentevals_schedule(monkeypatch):
    from pcctune.evaluation import senteval_probe as probe

    fits, epochs = [], []
    real_fit = probe.LogisticRegressionProbe.fit
    monkeypatch.setattr(
        probe.LogisticRegressionProbe, "fit", lambda self, *a, **k: fits.append(1) or real_fit(self, *a, **k)
    )
    monkeypatch.setattr(probe.LogisticRegressionProbe, "_epoch", lambda self, *a: epochs.append(1))  # count, no steps
    rng = np.random.default_rng(1)
    y = np.array([0, 1, 2] * 20)
    x = rng.normal(size=(60, 4)) + y[:, None] * 3
    probe.nested_cv_accuracy(x, y)
    assert len(fits) == probe.FOLDS * (len(probe.L2_GRID) * probe.FOLDS + 1)  # an inner search in each outer fold
    fits.clear()
    probe.train_test_predictions((x, y), x[:5])
    assert len(fits) == len(probe.L2_GRID) * probe.FOLDS + 1  # 10-fold CV per L2 value, then the refit
    fits.clear()
    probe.dev_selected_predictions((x, y), (x[:9], y[:9]), x[:5])
    assert len(fits) == len(probe.L2_GRID) + 1
    # early stopping: the best epoch first, then tenacity + 1 epochs without a new best
    epochs.clear()
    monkeypatch.setattr(probe.LogisticRegressionProbe, "score", lambda self, *a: 0.5)
    probe.LogisticRegressionProbe(4, 3, 1e-5, probe.ProbeSettings()).fit(x, y)
    assert len(epochs) == probe.ProbeSettings().tenacity + 2


def test_sentevals_probe_scores_the_split_tasks_on_its_own_features(mini_transfer, tiny_bert, monkeypatch):
    from pcctune.evaluation import senteval_probe
    from pcctune.evaluation.transfer import transfer_sentences
    from pcctune.modeling.build import build_model
    from pcctune.modeling.encoding import encode_unique

    widths, train_labels = [], []
    real = senteval_probe.train_test_predictions

    def spy(train, x):
        widths.append(x.shape[1])
        train_labels.append(list(train[1]))
        return real(train, x)

    monkeypatch.setattr(senteval_probe, "train_test_predictions", spy)
    trec_file = mini_transfer / "downstream" / "TREC" / "train_5500.label"
    trec_file.write_text("\n".join(reversed(trec_file.read_text().splitlines())))  # longer questions first
    model = build_model(str(tiny_bert))
    for name in ("SST2", "TREC", "MRPC"):
        task = load_transfer_task(mini_transfer, name)
        score = score_transfer_task(
            task, encode_unique(model, transfer_sentences(task), show_progress=False), probe="senteval"
        )
        assert score.name == name and 0 <= score.accuracy <= 100 and (score.f1 is not None) == (name == "MRPC")
    assert widths == [32, 64]  # TREC: u; MRPC: SentEval's [|u − v|, u·v] (the tiny BERT's width is 32)
    trec = load_transfer_task(mini_transfer, "TREC").splits["train"]
    assert train_labels[0] == [trec[1][i] for i in senteval_probe.senteval_order(*trec)] != trec[1]


def test_sentevals_probe_score_does_not_depend_on_the_test_files_order(mini_transfer):
    from pcctune.evaluation.transfer import transfer_sentences

    test_file = mini_transfer / "downstream" / "TREC" / "TREC_10.label"
    scores = []
    for _ in range(2):
        task = load_transfer_task(mini_transfer, "TREC")
        vectors = {s: np.array([1.0, 0.0]) if "good" in s else np.array([0.0, 1.0]) for s in transfer_sentences(task)}
        scores.append(score_transfer_task(task, vectors, probe="senteval").accuracy)
        test_file.write_text("\n".join(reversed(test_file.read_text().splitlines())))  # HUM's longer ones first
    assert scores == [100.0, 100.0]


def test_an_unknown_probe_is_one_line(capsys):
    from tests.conftest import assert_one_line_error, run_cli

    code, output = run_cli(["eval", "all-MiniLM-L6-v2", "--tasks", "transfer", "--probe", "liblinear"], capsys)
    assert_one_line_error(code, output, "unknown probe 'liblinear'; choose from sklearn, senteval")
