"""The STS data on first use: fetched from the Hub into the user cache where no SentEval folder is found.

pcctune looks for a SentEval folder at ``--data``, ``$PCCTUNE_DATA``, then ``shared/data`` beside the checkout
(``pcctune.paths.resolve_senteval_dir``). Where the user named none and none is there, the commands that read STS
data fetch what ``pcctune data download`` fetches (the seven test sets, STS-B and SICK from MTEB's Hub datasets at
pinned revisions, each checked against the SentEval release's pair count and content hash) into
``$PCCTUNE_CACHE/data/senteval`` (default ``~/.cache/pcctune/data/senteval``), once; later commands read that copy.

The copy is a verified cache entry (``pcctune.cache_entry.cached_folder``): written under a temporary name with
its manifest (every file's size and sha256) last, renamed into place, and checked against the manifest on every use,
so a fetch cut short is never taken for a complete one. Everything is fetched and checked in memory before anything
is written: where the Hub cannot be reached, nothing is written and the error names the command and flag that
supply the data instead.
"""

from __future__ import annotations

from pathlib import Path

from pcctune.cache_entry import cached_folder, damage
from pcctune.data import download
from pcctune.data.sts import STSPair
from pcctune.errors import PcctuneError
from pcctune.paths import data_cache_dir, data_is_chosen, resolve_senteval_dir

MADE_BY = "the STS data fetched on first use (pcctune data download's sets, hash-checked)"


def senteval_folder(path: str | Path | None = None, load: download.Loader | None = None) -> Path:
    """The SentEval folder to read: ``resolve_senteval_dir``'s, else (no ``--data``, no
    ``PCCTUNE_DATA``, nothing beside the checkout) the verified copy in the user cache, fetched now if missing.

    ``load`` reads one Hub source (default ``pcctune.data.download.hub_loader``)."""
    try:
        return resolve_senteval_dir(path)
    except PcctuneError:
        if data_is_chosen(path):
            raise
    target = data_cache_dir()
    if damage(target) is None:
        return target
    sets = fetch_sets(load or download.hub_loader, target)
    return cached_folder(target, lambda staging: download.write_senteval(sets, staging), MADE_BY)


def fetch_sets(load: download.Loader, target: Path) -> dict[str, list[STSPair]]:
    """Every set from the Hub, checked against the release, in memory; an unreachable Hub is one error line."""
    try:
        sets = download.hub_sets(load)
    except PcctuneError as error:
        raise PcctuneError(
            f"no SentEval data folder was found and fetching the STS data into {target} failed ({error}); "
            "where the Hub can be reached run: pcctune data download --dest DIR, then pass --data DIR "
            "(or set PCCTUNE_DATA=DIR)"
        ) from None
    download.verify(sets)
    return sets
