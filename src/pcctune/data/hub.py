"""Stage data from a Hugging Face dataset (``source: hub``), through ``datasets.load_dataset``.

``name`` is a Hub id (``sentence-transformers/all-nli`` with subset ``triplet``; ``princeton-nlp/datasets-for-simcse``
with ``data_files: nli_for_simcse.csv``, SimCSE's 275,601 triplets, the papers' stage-1 set) or a local folder in
the Hub's file layout; ``columns`` maps pcctune's column names (``anchor``, ``positive``, ``negative``; or
``sentence1``, ``sentence2``, ``score``) to the dataset's. Like a ``pairs`` file, a Hub set's scored pairs go
through the stage's leakage filter, and its triplets are counted against the test sets (``pcctune.training.audit``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pcctune.data.local import is_local, local_path
from pcctune.errors import PcctuneError, first_line


def load_hub_dataset(
    name: str,
    columns: Mapping[str, str] | None = None,
    subset: str | None = None,
    split: str = "train",
    revision: str | None = None,
    data_files: str | None = None,
) -> Any:
    """The dataset's split with its columns renamed to pcctune's (``columns``: pcctune's name → the dataset's);
    one clear error for an unreachable Hub, an unknown split or a missing column. Read it with
    ``triplets_from_hf_dataset`` or ``pairs_from_hf_dataset``."""
    import datasets

    local_path(name)  # a missing local path, or a folder with no data file, is refused before datasets looks
    try:
        dataset = datasets.load_dataset(name, subset, split=split, revision=revision, data_files=data_files)
    except Exception as error:  # network, missing repository or file, unknown split: one line for the user
        detail = first_line(error)
        where = "" if is_local(name) else f"; no file or folder {name!r} here either"
        raise PcctuneError(f"could not load Hub dataset {name!r} (split {split!r}): {detail}{where}") from None
    renames = {theirs: ours for ours, theirs in (columns or {}).items() if theirs != ours}
    missing = [theirs for theirs in renames if theirs not in dataset.column_names]
    if missing:
        raise PcctuneError(
            f"Hub dataset {name!r} has no column {missing[0]!r} (it has {', '.join(dataset.column_names)}); "
            "map pcctune's columns with data.columns"
        )
    return dataset.rename_columns(renames) if renames else dataset
