"""The leakage grid's comparisons, read from its records: Pearson against each other loss in the front page's blocks
as one planned family, read with Holm's decisions and Bonferroni's simultaneous intervals (:func:`family`,
:func:`decision`), the blocks off the front page and the contrasts between training sets uncorrected
(:func:`outside_family`, :func:`level_contrasts`), and the trained models' transfer scores against the base model's
noise floor (:func:`transfer_floor`). ``report`` writes them out."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from reproductions._common import Rows
from reproductions.leakage import wide
from reproductions.leakage.cells import SHORT, TASKS, groups, seed_averages

from pcctune.evaluation.multiple import Corrected
from pcctune.results import Difference

FRONT_PAGE = ("sentence", "pair")
"""The blocks whose comparisons the front page shows: the planned family is Pearson against each other loss in them."""
LEVEL_CONTRASTS = (
    ("control", "sentence", "reading the test sentences, at equal size"),
    ("pair", "control", "the rest of the pair-level set"),
)
"""Pairs of wide blocks whose difference, loss by loss, says what one training set adds over the other (the
control is ``sentence``'s twin drawn from the ``pair``-level set): read once both are complete, uncorrected."""


def interval(difference: Difference) -> str:
    """A difference as its mean and, where it has one, its interval: ``+0.12 [-0.20, +0.44]``."""
    mean = f"{difference.mean:+.2f}"
    if difference.low is None or difference.high is None:
        return mean
    return f"{mean} [{difference.low:+.2f}, {difference.high:+.2f}]"


def planned_comparisons() -> int:
    """How many comparisons the planned family holds: Pearson against each other loss in each front-page block, fixed
    before any test seed runs."""
    return sum(len(wide.BY_NAME[name].losses) - 1 for name in FRONT_PAGE)


def family(rows: Rows, complete: Collection[str]) -> dict[tuple[str, str], Corrected]:
    """(block, loss) → Pearson − the loss on the seven-task average, paired by test seed, in each front-page block
    that is ``complete``: its uncorrected 95 % interval, Holm's decision and Bonferroni's simultaneous interval over
    the whole planned family, the comparisons of blocks not complete yet counted as untested
    (:mod:`pcctune.evaluation.multiple`)."""
    from pcctune.evaluation.multiple import holm_differences

    found = groups(rows)
    comparisons = {
        (name, loss): pair
        for name in FRONT_PAGE
        if name in complete
        for loss, pair in against_pearson(found, wide.BY_NAME[name]).items()
    }
    corrected = holm_differences(
        {f"{name}/{loss}": pair for (name, loss), pair in comparisons.items()}, family_size=planned_comparisons()
    )
    return dict(zip(comparisons, corrected.values(), strict=True))


def against_pearson(found: dict[str, Rows], block: wide.Block) -> dict[str, tuple[dict[int, float], dict[int, float]]]:
    """Each other loss of ``block`` → (its seven-task averages, Pearson's), by test seed, where the two share at
    least two seeds (one seed, as in ``--quick``: no comparison)."""
    runs = {cell.loss: seed_averages(found.get(cell.name, [])) for cell in block.cells(list(block.losses))}
    return {
        loss: (scores, runs["pearson"])
        for loss, scores in runs.items()
        if loss != "pearson" and len(scores.keys() & runs["pearson"].keys()) >= 2
    }


def wide_family(found: dict[str, Any]) -> dict[tuple[str, str], Corrected]:
    """:func:`family` over the wide search's records as :func:`reproductions.leakage.wide.details` found them."""
    return family(found["rows"], wide.complete_blocks(found["progress"]))


def outside_family(rows: Rows, complete: Collection[str], settled: Collection[str]) -> list[str]:
    """Pearson against each other loss in each complete block the front page does not show (the control, the
    ``normalized`` and ``near`` levels, all-mpnet-base-v2), paired by test seed: uncorrected, and said so, since the
    planned family (:func:`family`) holds only the front page's comparisons. A block whose grown search is not
    ``settled`` is read at every loss's first winner, and its line says so: not that level's last word."""
    from pcctune.evaluation.compare import seed_difference

    found = groups(rows)
    lines = []
    for block in wide.BLOCKS:
        if block.name in FRONT_PAGE or block.name not in complete:
            continue
        stage = "" if block.name in settled else "; each loss at its first winner: the grown search is not complete"
        for loss, (scores, pearson) in against_pearson(found, block).items():
            difference = seed_difference(scores, pearson).sentence(loss, "Pearson")
            lines.append(f"- **wide, {block.name}** (outside the planned family, uncorrected{stage}): {difference}")
    return lines


def level_contrasts(rows: Rows, complete: Collection[str], first: Rows, settled: Collection[str]) -> list[str]:
    """For each of :data:`LEVEL_CONTRASTS` whose two blocks are complete, each loss's seven-task average on the one
    training set minus the other's, paired by test seed, uncorrected; below it the same for each of the seven test
    sets (a training set can move single tasks in opposite directions while the average stays). Both levels are read
    at one stage of the search: ``rows`` (their current winners) where both are ``settled``, else ``first``, the first
    search's winners at both, and the line says so."""
    from pcctune.evaluation.compare import seed_difference

    lines = []
    for after, before, what in LEVEL_CONTRASTS:
        if not {after, before} <= set(complete):
            continue
        both = {after, before} <= set(settled)
        found = groups(rows if both else first)
        what += "" if both else "; each level's first winner: the grown search is not complete at both"
        blocks = wide.BY_NAME[after], wide.BY_NAME[before]
        for loss in (loss for loss in blocks[0].losses if loss in blocks[1].losses):
            runs = [found.get(block.cells([loss])[0].name, []) for block in blocks]
            difference = seed_difference(seed_averages(runs[1]), seed_averages(runs[0])).sentence(before, after)
            lines.append(f"- **wide, {after} − {before}** ({what}), {loss}: {difference}")
            by_task = []
            for task, short in zip(TASKS, SHORT, strict=True):
                after_runs, before_runs = ({r["seed"]: r["sts"][task] for r in side} for side in runs)
                by_task.append(f"{short} {interval(seed_difference(before_runs, after_runs))}")
            lines.append(f"  - by test set, {after} − {before} (95 %, uncorrected): " + ", ".join(by_task))
    return lines


def transfer_floor(scores: dict[str, dict[str, float]], blocks: Collection[str]) -> list[str]:
    """The trained models' transfer averages against the base model's noise floor (its lowest to highest average
    over the probe seeds), for each of ``blocks`` whose transfer evaluations have all run: no loss hurts only where
    none of the block's models falls below the floor, else the numbers that do."""
    base = {name: found["avg"] for name, found in scores.items() if name.startswith("base-probe")}
    if len(base) < 2:
        return []
    low, high = min(base.values()), max(base.values())
    seeds = ", ".join(name.removeprefix("base-probe") for name in base)
    floor = f"the base model reads {low:.2f} to {high:.2f} over probe seeds {seeds}"
    lines = []
    for block in blocks:
        models = {name: found["avg"] for name, found in scores.items() if name.startswith(f"minilm-{block}-")}
        if not models:
            continue
        below = {name: avg for name, avg in models.items() if avg < low}
        if not below:
            lines.append(f"- **wide, transfer, {block}**: {floor}; no loss's model falls below it: no loss hurts")
        else:
            listed = ", ".join(f"{name} {avg:.2f}" for name, avg in below.items())
            lines.append(f"- **wide, transfer, {block}**: {floor}; below it: {listed}")
    return lines
