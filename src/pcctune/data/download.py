"""``pcctune data download``: the STS evaluation data from the Hugging Face Hub, in the SentEval layout.

For a user on a machine without the SentEval folder: the seven STS test sets, STS-B train / dev
and SICK train / trial, fetched from MTEB's datasets at the revisions MTEB itself pins
(``SOURCES``), written where pcctune's readers look (``pcctune.data.senteval``), then
checked: every set must have the standard SentEval release's pair count and content hash
(``EXPECTED``, computed from that release). A mismatch is an error naming the set, and the
folder is not written.

- STS12–16: one subset file per year (``STS.input.all.txt`` / ``STS.gs.all.txt``). pcctune
  scores a year on the concatenation of its subsets, so the numbers are those of the per-subset
  release.
- STS-B: ``sts-{train,dev,test}.csv`` with the seven SentEval fields (genre / file / year / id
  filled with ``hub`` / the dataset id / ``-`` / the row number).
- SICK: MTEB's ``mteb/sickr-sts`` holds all 9,927 SemEval-2014 pairs in one ``test`` split, in the
  release's order (train 4,500, trial 500, test 4,927); the three files are its slices, and each
  slice must match its own hash, so a different order cannot pass silently.

Not provided: the Moses-tokenized STS copy of the ``paper`` protocol, and the transfer tasks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from pcctune.data.senteval import (
    SICK_SPLITS,
    STS_YEARS,
    STSB_SPLITS,
    load_sick,
    load_stsb,
    own_sick_dir,
    sts_dir,
    sts_year_dir,
)
from pcctune.data.sts import STSPair, read_senteval_sts_year
from pcctune.errors import PcctuneError, first_line
from pcctune.io import atomic_folder, write_text


@dataclass(frozen=True)
class HubSource:
    """A Hub dataset at a pinned revision (MTEB's task metadata pins the same ones)."""

    path: str
    revision: str


SOURCES: dict[str, HubSource] = {
    "STS12": HubSource("mteb/sts12-sts", "a0d554a64d88156834ff5ae9920b964011b16384"),
    "STS13": HubSource("mteb/sts13-sts", "7e90230a92c190f1bf69ae9002b8cea547a64cca"),
    "STS14": HubSource("mteb/sts14-sts", "6031580fec1f6af667f0bd2da0a551cf4f0b2375"),
    "STS15": HubSource("mteb/sts15-sts", "ae752c7c21bf194d8b67fd573edf7ae58183cbe3"),
    "STS16": HubSource("mteb/sts16-sts", "4d8694f8f0e0100860b497b999b3dbed754a0513"),
    "STSBenchmark": HubSource("mteb/stsbenchmark-sts", "b0fddb56ed78048fa8b90373c8a3cfc37b684831"),
    "SICK": HubSource("mteb/sickr-sts", "20a6d6f312dd54037fe07a32d58e5e168867909d"),
}
SICK_SLICES = {"train": (0, 4500), "dev": (4500, 5000), "test": (5000, 9927)}
"""Where each SemEval-2014 split lies in ``mteb/sickr-sts``'s one split (the release's order)."""
STSB_HUB_SPLITS = {"train": "train", "dev": "validation", "test": "test"}

EXPECTED: dict[str, tuple[int, str]] = {
    "STS12": (3108, "c3d0bbc25e289444eb6802f5769774fad85783353c33f00f6edd01563e33243b"),
    "STS13": (1500, "9505044f93ff3df96e8da2cd558d74291c16e4bf0540a2c8659cb14d436a17c6"),
    "STS14": (3750, "88f00ad97e1b558d4b27f22489fd691443f3e20c07e3fa28f44266ac14b929e6"),
    "STS15": (3000, "911fa671c1ea6ab765a02977ff1dcd696059d3572c43a9f209d0bfe4a5e2bcbc"),
    "STS16": (1186, "a114c6901257bd243dbbf3f42fa59695c4146d2f9c000ce054b50726508e359c"),
    "STSBenchmark:train": (5749, "242accf7e6635d963cead25e8ca90b68037d986a1377de7322dfdc0413c05c4c"),
    "STSBenchmark:dev": (1500, "1ba4a3ea4484ac23581275262efbf7fd3a12f1a7a40eb071a1680b398e1a0b82"),
    "STSBenchmark:test": (1379, "b73ae2b7b2d04820ea2397fae593b030130c0c6e20464b08a373d919f84a1224"),
    "SICK:train": (4500, "3d8fad38c2b38bbaf11b4bb9ea3b675225ee763532a8eef6379275520dea6f0b"),
    "SICK:dev": (500, "02dd49fc738ad0cf20bf071f0c1773ef7576fa45fbb77a734d8598d4df479948"),
    "SICK:test": (4927, "03afcd3af4a07d510a9889b1c3dbafbd65550cde5e8b465a9677c797ca278330"),
}
"""Set → (pairs, ``content_hash``) of the standard SentEval release."""

Loader = Callable[[HubSource], Any]
"""Returns the dataset (a ``DatasetDict``: split → rows of sentence1, sentence2, score) of a source."""


HUB_PROBE_TIMEOUT_S = 5.0
"""How long the one request that checks the Hub can be reached may take."""


def reach_hub() -> None:
    """One request to the Hub's address, not retried: an error now where it cannot be reached (``HF_HUB_OFFLINE``
    set, no network), instead of after ``huggingface_hub``'s five retries of each file (half a minute)."""
    from huggingface_hub import constants, get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=HUB_PROBE_TIMEOUT_S)  # any answer: the Hub is there
    except Exception as error:  # offline mode, no network, no name resolution, a timeout
        raise PcctuneError(
            f"could not reach the Hugging Face Hub at {constants.ENDPOINT}: {first_line(error)}"
        ) from None


def hub_loader(source: HubSource) -> Any:
    """The real loader: ``datasets.load_dataset`` at the pinned revision; an unreachable Hub is one clear error,
    at once (``reach_hub``)."""
    reach_hub()
    from datasets import load_dataset

    try:
        return load_dataset(source.path, revision=source.revision)
    except Exception as error:  # a missing revision, a connection lost: one line for the user
        raise PcctuneError(f"could not load {source.path} from the Hugging Face Hub: {first_line(error)}") from None


def local_loader(folder: Path) -> Loader:
    """A loader of copies saved with ``DatasetDict.save_to_disk`` as ``folder/<Hub id>`` (offline; tests)."""

    def load(source: HubSource) -> Any:
        from datasets import load_from_disk

        path = folder / source.path
        if not path.is_dir():
            raise PcctuneError(f"missing local copy of {source.path}: {path}")
        return load_from_disk(str(path))

    return load


def content_hash(pairs: Iterable[STSPair]) -> str:
    """SHA-256 of the pairs as sorted ``sentence1 TAB sentence2 TAB score`` lines (order does not matter)."""
    lines = sorted(f"{p.sentence1}\t{p.sentence2}\t{p.score:.4f}" for p in pairs)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def release_sets(senteval_dir: Path) -> dict[str, list[STSPair]]:
    """Every set this command provides, read from a SentEval folder (the release, or a download)."""
    sets = {f"STS{y}": read_senteval_sts_year(sts_year_dir(senteval_dir, y), f"STS{y}").pairs for y in STS_YEARS}
    sets.update({f"STSBenchmark:{split}": load_stsb(senteval_dir, split).pairs for split in STSB_SPLITS})
    sets.update({f"SICK:{split}": load_sick(senteval_dir, split).pairs for split in SICK_SPLITS})
    return sets


def _pairs(rows: Any, where: str) -> list[STSPair]:
    """Hub rows (sentence1, sentence2, score) as pairs; a sentence that would break a TSV line is refused."""
    pairs = []
    for index, row in enumerate(rows):
        first, second = str(row["sentence1"]), str(row["sentence2"])
        if any(c in text for text in (first, second) for c in "\t\n\r"):
            raise PcctuneError(f"{where} row {index}: a sentence holds a tab or line break")
        pairs.append(STSPair(first, second, float(row["score"])))
    return pairs


def fetch_sources(load: Loader) -> dict[str, Any]:
    """Each of ``SOURCES`` loaded, with a progress bar over the seven datasets."""
    return {
        name: load(source)
        for name, source in tqdm(SOURCES.items(), desc="Fetching STS data", unit="dataset", disable=None)
    }


def hub_sets(load: Loader) -> dict[str, list[STSPair]]:
    """Every set, named as in ``EXPECTED``, from the Hub sources (or a loader of local copies)."""
    loaded = fetch_sources(load)
    sets = {f"STS{y}": _pairs(loaded[f"STS{y}"]["test"], f"STS{y}") for y in STS_YEARS}
    stsb = loaded["STSBenchmark"]
    sets.update({f"STSBenchmark:{s}": _pairs(stsb[hub], f"STSBenchmark:{hub}") for s, hub in STSB_HUB_SPLITS.items()})
    sick = _pairs(loaded["SICK"]["test"], "SICK")
    sets.update({f"SICK:{split}": sick[start:end] for split, (start, end) in SICK_SLICES.items()})
    return sets


def verify(sets: dict[str, list[STSPair]]) -> None:
    """Every set has the release's pair count and content; else one error naming each set that differs."""
    wrong = []
    for name, (count, digest) in EXPECTED.items():
        pairs = sets.get(name, [])
        if len(pairs) != count:
            wrong.append(f"{name}: {len(pairs)} pairs, expected {count}")
        elif content_hash(pairs) != digest:
            wrong.append(f"{name}: {count} pairs but not the SentEval release's (content hash differs)")
    if wrong:
        raise PcctuneError("the data is not the standard SentEval release: " + "; ".join(wrong))


def _score(value: float) -> str:
    return repr(value)  # the shortest text that reads back as the same float


def write_senteval(sets: dict[str, list[STSPair]], root: Path) -> None:
    """Write ``sets`` under ``root`` in the SentEval layout pcctune's readers read."""
    for year in STS_YEARS:
        folder = sts_year_dir(root, year)
        pairs = sets[f"STS{year}"]
        write_text(folder / "STS.input.all.txt", "".join(f"{p.sentence1}\t{p.sentence2}\n" for p in pairs))
        write_text(folder / "STS.gs.all.txt", "".join(f"{_score(p.score)}\n" for p in pairs))
    for split, filename in STSB_SPLITS.items():
        rows = sets[f"STSBenchmark:{split}"]
        lines = (
            f"hub\t{SOURCES['STSBenchmark'].path}\t-\t{i:04d}\t{_score(p.score)}\t{p.sentence1}\t{p.sentence2}\n"
            for i, p in enumerate(rows)
        )
        write_text(sts_dir(root) / "STSBenchmark" / filename, "".join(lines))
    sick = own_sick_dir(root)
    for split, filename in SICK_SPLITS.items():
        header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        start = SICK_SLICES[split][0]
        lines = (
            f"{start + i + 1}\t{p.sentence1}\t{p.sentence2}\t{_score(p.score)}\tNA\n"
            for i, p in enumerate(sets[f"SICK:{split}"])
        )
        write_text(sick / filename, header + "".join(lines))


def download(dest: Path, load: Loader = hub_loader, check: bool = True, overwrite: bool = False) -> Path:
    """Fetch every set, check it against the release (unless ``check`` is off), write ``dest/senteval``
    atomically; return that folder (what ``--data`` / ``PCCTUNE_DATA`` take)."""
    target = dest / "senteval"
    if target.exists() and not overwrite:
        raise PcctuneError(f"{target} exists; pass --overwrite to replace it")
    sets = hub_sets(load)
    if check:
        verify(sets)
    with atomic_folder(target) as staging:
        write_senteval(sets, staging)
    return target
