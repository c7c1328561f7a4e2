"""``pcctune data download`` and the STS data fetched on first use, end to end, offline, on local dataset objects.

The local copies are shaped like MTEB's Hub datasets (``sentence1`` / ``sentence2`` / ``score``;
STS-B with train / validation / test; SICK-R as one 9,927-pair ``test`` split) and built from the
standard SentEval release (the ``shared/data`` folder beside the checkout), so the pinned counts and hashes are
checked for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcctune.data import download
from pcctune.data.download import SICK_SLICES, SOURCES, STSB_HUB_SPLITS, local_loader, release_sets
from pcctune.paths import resolve_senteval_dir
from tests.conftest import assert_one_line_error, run_cli


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


@pytest.fixture(scope="module")
def hub_copies(release, tmp_path_factory) -> Path:
    """The release saved as MTEB's Hub datasets: what the Hub serves, read offline."""
    return save_hub_copies(release, tmp_path_factory.mktemp("hub"))


@pytest.fixture()
def no_data_folder(tmp_path, monkeypatch) -> Path:
    """No --data, no PCCTUNE_DATA, nothing beside the checkout; the user cache in a fresh folder (returned)."""
    monkeypatch.delenv("PCCTUNE_DATA", raising=False)
    monkeypatch.setattr("pcctune.paths._candidate_roots", lambda: [tmp_path / "nothing-here"])
    monkeypatch.setenv("PCCTUNE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def serve_hub(monkeypatch, folder: Path, fail_at: str | None = None) -> list[str]:
    """Serve ``folder``'s copies as the Hub; return the list of sources fetched (growing as they are).
    ``fail_at``: that source's fetch is cut by Ctrl-C."""
    fetched: list[str] = []
    load = local_loader(folder)

    def hub(source):
        if source.path == fail_at:
            raise KeyboardInterrupt
        fetched.append(source.path)
        return load(source)

    monkeypatch.setattr(download, "hub_loader", hub)
    return fetched


def test_first_use_fetches_the_data_into_the_cache_and_later_commands_reuse_it(
    hub_copies, no_data_folder, monkeypatch, capsys
):
    fetched = serve_hub(monkeypatch, hub_copies)
    code, output = run_cli(["data", "tasks", "--check-release"], capsys)
    assert code == 0, output
    assert "every set matches the SentEval release" in output and "STS12: 3108 pairs" in output
    assert sorted(fetched) == sorted(s.path for s in SOURCES.values())
    cached = no_data_folder / "data" / "senteval"
    assert (cached / "pcctune-entry.json").is_file()
    assert release_sets(cached).keys() == release_sets(resolve_senteval_dir(cached)).keys()
    fetched.clear()
    code, output = run_cli(["data", "tasks"], capsys)
    assert code == 0 and "STS12: 3108 pairs" in output
    assert fetched == []  # the second command reads the cache


def test_a_fetch_cut_short_is_not_taken_for_a_complete_one(hub_copies, no_data_folder, monkeypatch, capsys):
    serve_hub(monkeypatch, hub_copies, fail_at=SOURCES["STS16"].path)
    code, _ = run_cli(["data", "tasks"], capsys)
    assert code == 130
    cached = no_data_folder / "data" / "senteval"
    assert not cached.exists()
    # a copy whose writing was cut (files there, one short, no manifest) is fetched again, not read
    serve_hub(monkeypatch, hub_copies)
    assert run_cli(["data", "tasks"], capsys)[0] == 0
    gold = cached / "downstream" / "STS" / "STS12-en-test" / "STS.gs.all.txt"
    gold.write_text("".join(gold.read_text().splitlines(keepends=True)[:100]))
    fetched = serve_hub(monkeypatch, hub_copies)
    code, output = run_cli(["data", "tasks"], capsys)
    assert code == 0 and "STS12: 3108 pairs" in output, output
    assert len(fetched) == len(SOURCES)


def test_no_data_folder_and_no_hub_is_one_error_line_and_nothing_written(no_data_folder, capsys):
    code, output = run_cli(["data", "tasks"], capsys)  # HF_HUB_OFFLINE=1: the real loader cannot reach the Hub
    assert_one_line_error(code, output, "pcctune data download --dest DIR")
    assert "--data DIR" in output
    assert not no_data_folder.exists()


def test_an_unreachable_hub_is_one_error_line_at_once(no_data_folder, monkeypatch, capsys):
    import time

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: a refused connection
    started = time.perf_counter()
    code, output = run_cli(["data", "tasks"], capsys)
    assert_one_line_error(code, output, "could not reach the Hugging Face Hub at http://127.0.0.1:9")
    assert time.perf_counter() - started < 15  # one request, not huggingface_hub's five retries of a file
    assert not no_data_folder.exists()
