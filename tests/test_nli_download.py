"""``pcctune data download --nli``, offline against a local copy laid out as the Hub repository."""

from __future__ import annotations

import hashlib

import pytest

from pcctune.data.nli_download import SIMCSE_NLI_FILE, SIMCSE_NLI_REPO, download_nli
from pcctune.errors import PcctuneError
from tests.conftest import SENTENCES, assert_one_line_error, run_cli


@pytest.fixture()
def local_copy(tmp_path):
    folder = tmp_path / "hub" / SIMCSE_NLI_REPO
    folder.mkdir(parents=True)
    rows = ["sent0,sent1,hard_neg"] + [f"{SENTENCES[i]},{SENTENCES[i + 1]},{SENTENCES[i + 2]}" for i in range(6)]
    (folder / SIMCSE_NLI_FILE).write_text("\n".join(rows) + "\n", encoding="utf-8")
    return tmp_path / "hub", hashlib.sha256((folder / SIMCSE_NLI_FILE).read_bytes()).hexdigest()


def test_the_file_is_written_with_its_hash_and_a_pinned_hash_is_checked(local_copy, tmp_path):
    hub, digest = local_copy
    target, written = download_nli(tmp_path / "data", hub, sha256=digest, expected_rows=6)
    assert written == digest
    assert target.read_bytes() == (hub / SIMCSE_NLI_REPO / SIMCSE_NLI_FILE).read_bytes()
    assert (tmp_path / "data" / f"{SIMCSE_NLI_FILE}.sha256").read_text().split()[0] == digest
    with pytest.raises(PcctuneError, match="not the pinned"):
        download_nli(tmp_path / "other", hub, sha256="0" * 64, expected_rows=6)
    assert not (tmp_path / "other").exists()


def test_a_file_that_is_not_simcses_is_refused_in_one_line(local_copy, tmp_path, capsys):
    hub, _ = local_copy
    args = ["data", "download", "--nli", "--dest", str(tmp_path / "data"), "--local-datasets", str(hub)]
    code, output = run_cli(args, capsys)
    assert_one_line_error(code, output, "has 6 triplets, SimCSE's has 275,601")
    assert not (tmp_path / "data").exists()
