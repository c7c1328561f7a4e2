"""``pcctune data download --nli``: SimCSE's NLI triplets, the papers' stage-1 set, as a local file.

The file is ``nli_for_simcse.csv`` of the Hub dataset ``princeton-nlp/datasets-for-simcse`` (275,601 triplets:
sent0, sent1, hard_neg; Pcc-tuning §3, SimCSE §5). It is fetched as it is stored (``hf_hub_download``, at a
revision when given), read back with pcctune's own reader, its row count checked, and its sha256 written beside
it (``nli_for_simcse.csv.sha256``). ``--sha256`` pins the expected hash: a different file is refused and
nothing is written. pcctune ships no pinned hash for this file: none could be measured where it was built.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pcctune.data.nli import read_simcse_csv
from pcctune.errors import PcctuneError
from pcctune.io import free_bytes, write_bytes, write_text

SIMCSE_NLI_REPO = "princeton-nlp/datasets-for-simcse"
SIMCSE_NLI_FILE = "nli_for_simcse.csv"
SIMCSE_NLI_ROWS = 275_601


def fetch_nli_file(local: Path | None, revision: str | None) -> Path:
    """The raw file: from ``local/<repo id>/`` (a saved copy), else from the Hub."""
    if local is not None:
        path = local / SIMCSE_NLI_REPO / SIMCSE_NLI_FILE
        if not path.is_file():
            raise PcctuneError(f"missing local copy of {SIMCSE_NLI_REPO}/{SIMCSE_NLI_FILE}: {path}")
        return path
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(SIMCSE_NLI_REPO, SIMCSE_NLI_FILE, repo_type="dataset", revision=revision))
    except Exception as error:  # offline, a missing revision: one line
        raise PcctuneError(f"could not download {SIMCSE_NLI_REPO}/{SIMCSE_NLI_FILE}: {error}") from None


def download_nli(
    dest: Path,
    local: Path | None = None,
    sha256: str | None = None,
    revision: str | None = None,
    expected_rows: int = SIMCSE_NLI_ROWS,
) -> tuple[Path, str]:
    """Write ``dest/nli_for_simcse.csv`` and its ``.sha256``; refuse a file of another hash or row count.
    Returns the file and its sha256."""
    source = fetch_nli_file(local, revision)
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256.lower():
        raise PcctuneError(f"{SIMCSE_NLI_FILE} has sha256 {digest}, not the pinned {sha256}; nothing was written")
    rows = len(read_simcse_csv(source))
    if rows != expected_rows:
        raise PcctuneError(
            f"{SIMCSE_NLI_FILE} has {rows:,} triplets, SimCSE's has {expected_rows:,}; nothing was written"
        )
    target = dest / SIMCSE_NLI_FILE
    if free_bytes(dest) < len(data):
        raise PcctuneError(f"not enough free space in {dest} for {SIMCSE_NLI_FILE}")
    write_bytes(target, data)
    write_text(target.with_name(SIMCSE_NLI_FILE + ".sha256"), f"{digest}  {SIMCSE_NLI_FILE}\n")
    return target, digest
