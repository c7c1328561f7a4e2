"""Issue 15, acceptance 5: ``pcctune data download`` end to end, offline, on local dataset objects.

The local copies are shaped like MTEB's Hub datasets (``sentence1`` / ``sentence2`` / ``score``;
STS-B with train / validation / test; SICK-R as one 9,927-pair ``test`` split) and built from the
standard SentEval release in ``../shared/data``, so the pinned counts and hashes are checked for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcctune.data.download import SICK_SLICES, SOURCES, STSB_HUB_SPLITS, release_sets
from pcctune.paths import resolve_senteval_dir
from tests.conftest import run_cli


def _rows(pairs) -> dict[str, list]:
    return {
        "sentence1": [p.sentence1 for p in pairs],
        "sentence2": [p.sentence2 for p in pairs],
        "score": [p.score for p in pairs],
    }


def save_hub_copies(sets: dict, folder: Path) -> Path:
    """Save ``sets`` as the Hub datasets of :data:`SOURCES`, each as ``folder/<Hub id>``."""
    from datasets import Dataset, DatasetDict

    for year in range(12, 17):
        DatasetDict({"test": Dataset.from_dict(_rows(sets[f"STS{year}"]))}).save_to_disk(
            folder / SOURCES[f"STS{year}"].path
        )
    stsb = {hub: Dataset.from_dict(_rows(sets[f"STSBenchmark:{ours}"])) for ours, hub in STSB_HUB_SPLITS.items()}
    DatasetDict(stsb).save_to_disk(folder / SOURCES["STSBenchmark"].path)
    sick = [pair for split in SICK_SLICES for pair in sets[f"SICK:{split}"]]
    DatasetDict({"test": Dataset.from_dict(_rows(sick))}).save_to_disk(folder / SOURCES["SICK"].path)
    return folder


@pytest.fixture(scope="module")
def release():
    return release_sets(resolve_senteval_dir(None))


def test_download_writes_a_folder_eval_scores_like_the_release(release, tiny_bert, tmp_path, capsys):
    local = save_hub_copies(release, tmp_path / "hub")
    code, output = run_cli(["data", "download", "--dest", str(tmp_path / "dl"), "--local-datasets", str(local)], capsys)
    assert code == 0, output
    downloaded = tmp_path / "dl" / "senteval"
    assert str(downloaded) in output.replace("\n", "")
    assert {k: len(v) for k, v in release_sets(downloaded).items()} == {k: len(v) for k, v in release.items()}
    scores = {}
    for name, data in (("release", resolve_senteval_dir(None)), ("download", downloaded)):
        out = tmp_path / f"{name}.json"
        code, output = run_cli(["eval", str(tiny_bert), "--data", str(data), "--output", str(out)], capsys)
        assert code == 0, output
        scores[name] = json.loads(out.read_text())["sts"]
    assert scores["download"] == pytest.approx(scores["release"], abs=1e-9)


def test_a_copy_that_differs_from_the_release_is_refused_and_nothing_is_written(release, tmp_path, capsys):
    from pcctune.data.sts import STSPair

    changed = dict(release)
    first = changed["SICK:train"][0]
    changed["SICK:train"] = [STSPair(first.sentence1, first.sentence2, first.score + 0.5), *changed["SICK:train"][1:]]
    changed["STS13"] = changed["STS13"][:-1]
    local = save_hub_copies(changed, tmp_path / "hub")
    code, output = run_cli(["data", "download", "--dest", str(tmp_path / "dl"), "--local-datasets", str(local)], capsys)
    assert code == 2
    assert "SICK:train" in output and "STS13: 1499 pairs, expected 1500" in output
    assert not (tmp_path / "dl" / "senteval").exists()


def test_an_existing_folder_is_kept_unless_overwrite(tmp_path, capsys):
    (tmp_path / "dl" / "senteval").mkdir(parents=True)
    code, output = run_cli(["data", "download", "--dest", str(tmp_path / "dl")], capsys)
    assert code == 2 and "--overwrite" in output


def test_a_missing_data_folder_names_the_download_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PCCTUNE_DATA", str(tmp_path / "nowhere"))
    code, output = run_cli(["data", "tasks"], capsys)
    assert code == 2 and "pcctune data download" in output


def test_data_tasks_checks_a_folder_against_the_release(mini_senteval, capsys):
    code, output = run_cli(["data", "tasks", "--check-release"], capsys)  # ../shared/data: the release itself
    assert code == 0 and "every set matches the SentEval release" in output and "STS12: 3108 pairs" in output
    code, output = run_cli(["data", "tasks", "--data", str(mini_senteval), "--check-release"], capsys)
    assert code == 2 and "the data is not the standard SentEval release: STS12: 7 pairs, expected 3108" in output
