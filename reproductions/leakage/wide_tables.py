"""The wide search's records read out in ``table.md`` and ``verdict.md``: its design, each cell's winner over the
test seeds (and the first winners the grown search replaced), the search and the grown search with the selection's
own noise, the planned family's corrected comparisons, the transfer tasks against the base model's noise floor,
and the Progress table."""

from __future__ import annotations

import statistics
from typing import Any

from reproductions._common import Rows
from reproductions.leakage import growth, wide
from reproductions.leakage.cells import SHORT, TASKS, cell_text, groups
from reproductions.leakage.comparisons import (
    interval,
    level_contrasts,
    outside_family,
    planned_comparisons,
    transfer_floor,
    wide_family,
)
from reproductions.leakage.growth import Point

from pcctune.data.transfer import TRANSFER_TASKS
from pcctune.evaluation.multiple import Corrected, simultaneous_label


def transfer_table(scores: dict[str, dict[str, float]], base: float | None = None) -> str:
    """Accuracy % of the seven transfer tasks (MRPC: accuracy) and the average minus the base model's (``base``, by
    default the ``base`` row's)."""
    header = ["model", *TRANSFER_TASKS, "avg", "avg − base"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    base = scores.get("base", {}).get("avg") if base is None else base
    for name, found in scores.items():
        change = "—" if base is None or name == "base" else f"{found['avg'] - base:+.2f}"
        values = " | ".join(f"{found[task]:.2f}" for task in [*TRANSFER_TASKS, "avg"])
        lines.append(f"| {'base model' if name == 'base' else name} | {values} | {change} |")
    return "\n".join(lines)


PROGRESS_LEAD = (
    "Progress (runs with a record; `python -m reproductions leakage --rerun -- --cells BLOCK --jobs 2` runs a "
    "block's missing runs in order, a run cut off resuming from its last checkpoint, and rewrites this table):"
)


def progress_table(blocks: list[dict[str, Any]]) -> str:
    """Which blocks are complete: their runs with a record of those planned (first search complete: every search
    and test run of the first search, what the level's verdict reads), their grown search (complete once every
    cell's winner is decided and tested: until then the level is read at its first winners) and their transfer
    evaluations."""
    header = ["block", "search runs", "test runs", "first search complete", "grown search", "transfer evaluations"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for block in blocks:
        (searched, searches), (tested, tests), (moved, transfers) = (block[k] for k in ("search", "test", "transfer"))
        search = f"{searched} of {searches}" if searches else "— (MiniLM's winners)"
        done = "yes" if block["block"] in wide.complete_blocks([block]) else "no"
        grown, planned = block.get("growth", (0, 0))
        growing = f"{grown} of {planned}, " + ("complete" if block["settled"] else "so far") if planned else "—"
        transfer = f"{moved} of {transfers}" if transfers else "—"
        lines.append(f"| {block['block']} | {search} | {tested} of {tests} | {done} | {growing} | {transfer} |")
    return "\n".join(lines)


def setting_text(settings: dict[str, Any]) -> str:
    values = (settings["batch_size"], settings["warmup_ratio"], settings["epochs"])
    return f"{settings['learning_rate']:.1e} / {values[0]} / {values[1]:g} / {values[2]}"


def wide_table(found: dict[str, Any], corrected: dict[tuple[str, str], Corrected]) -> str:
    """The wide search's section of ``table.md``: its design, each cell's winner over the test seeds (and the first
    winners the grown search replaced, with the family they gave), the search, the grown search, the ``corrected``
    comparisons (``comparisons.wide_family``) and the transfer tasks with the base model's noise floor."""
    rows, points = found["rows"], found["design"]
    seeds = found["seeds"]
    by_block = "; ".join(f"{', '.join(map(str, chosen))} at {block}" for block, chosen in seeds["search"].items())
    lines = [
        f"Wide search: every loss over the same {len(points)} settings (scrambled Sobol points), each scored by the "
        f"mean best dev of its search seeds ({by_block}); the winner over test seeds "
        f"{seeds['test'][0]}–{seeds['test'][-1]} (all-mpnet-base-v2: {seeds['mpnet'][0]}–{seeds['mpnet'][-1]}, on "
        "MiniLM's winner of its level):",
        "",
        "| point | lr / batch / warm-up / epochs |",
        "| --- | --- |",
        *(f"| {k} | {setting_text(settings)} |" for k, settings in enumerate(points)),
    ]
    if rows:
        lines += ["", winners_table(rows)]
    lines += first_and_growing_lines(found, corrected)
    if found.get("progress"):
        lines += ["", PROGRESS_LEAD, "", progress_table(found["progress"])]
    if found["search"]:
        searched = found["seeds"]["search"]
        planned = {
            cell.name: len(searched[block.name])
            for block in wide.BLOCKS
            if block.name in searched
            for cell in block.cells(list(block.losses))
        }
        lines += ["", search_table(found["search"], len(points), planned)]
    if found.get("growth"):
        lines += ["", growth_table(found["growth"], found["search"], planned)]
    if corrected:
        lines += ["", comparison_table(corrected)]
    return "\n".join(lines + transfer_lines(found))


def first_and_growing_lines(found: dict[str, Any], corrected: dict[tuple[str, str], Corrected]) -> list[str]:
    """The first winners the grown search replaced at a settled level (with the family they gave), then the grown
    winners tested at a level still growing, which no family reads yet."""
    lines = []
    if found["first_rows"]:
        lines += [
            "",
            "The first search's winners that the grown search replaced (their test runs, `records/wide/`), and the "
            "planned family as the first search's winners left it:",
            "",
            winners_table(found["first_rows"]),
        ]
        if corrected:
            lines += ["", comparison_table(wide_family(before_growth(found)))]
    if found.get("growing_rows"):
        lines += [
            "",
            "Grown winners tested at levels whose grown search is still under way (read into no family until it is "
            "complete there: until then every loss of the level is read at its first winner):",
            "",
            winners_table(found["growing_rows"]),
        ]
    return lines


def transfer_lines(found: dict[str, Any]) -> list[str]:
    """The transfer tasks' tables: each cell's winner's model with the base model's noise floor, then the models of
    the first winners the grown search replaced, read against the same base."""
    if not found["transfer"]:
        return []
    transfer = with_base_mean(found["transfer"])
    lines = ["", "Transfer tasks, accuracy % (wide search; base model: the mean over its probe seeds):", ""]
    lines.append(transfer_table(transfer))
    if found.get("first_transfer"):
        lines += ["", "Transfer tasks of the first winners' models that the grown search replaced, accuracy %:", ""]
        lines.append(transfer_table(found["first_transfer"], transfer.get("base", {}).get("avg")))
    return lines


def winners_table(rows: Rows) -> str:
    """Each cell's winner over its test seeds: training and dev pairs, seeds, mean dev, the seven tasks and the
    average (mean ± std), its point and how many seeds were best at their last step."""
    header = ["cell", "train pairs", "dev pairs", "seeds", "dev", *SHORT, "avg", "point", "best at last step"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for cell, group in groups(rows).items():
        cells = " | ".join(cell_text([r["sts"][task] for r in group]) for task in [*TASKS, "avg"])
        dev = cell_text([100 * r["best_dev"] for r in group])
        dev_pairs = "+".join(f"{n}" for n in group[0]["dev_pairs"].values()) or "—"
        last = sum(r["last_step"] for r in group)
        lines.append(
            f"| {cell} | {group[0]['train_examples']} | {dev_pairs} | {len(group)} | {dev} | {cells} | "
            f"{group[0]['point']} | {last} of {len(group)} |"
        )
    return "\n".join(lines)


def before_growth(found: dict[str, Any]) -> dict[str, Any]:
    """The wide search's records (:func:`reproductions.leakage.wide.details`) as the first search left them: each
    cell the grown search replaced read from its first winner's test runs again (``first_rows``)."""
    replaced = {row["cell"] for row in found["first_rows"]}
    rows = [row for row in found["rows"] if row["cell"] not in replaced] + found["first_rows"]
    return found | {"rows": rows, "first_rows": [], "growth": []}


GROWTH_RULE = (
    f"{' and '.join(f'{factor}×' for factor in growth.FIRST_FACTORS)} the winner's epochs, at "
    f"{' and '.join(f'`{name}`' for name in wide.HALF_RATE_BLOCKS)} also half its learning rate at "
    f"{growth.HALF_RATE_FACTOR}×; "
    + "; ".join(f"a winner at {low}× grows to {high}×" for low, high in growth.FURTHER.items())
)
"""The growth rule in words, from ``reproductions.leakage.growth``'s factors."""


def growth_table(grown: list[dict[str, Any]], search: list[dict[str, Any]], seeds: dict[str, int]) -> str:
    """The grown search (``reproductions/leakage/growth.py``): each cell's grown points, their mean best dev × 100
    over the search seeds that have run (``n of k seeds`` where not all of the ``seeds`` its block plans have; †
    where a seed's best checkpoint was its last step), the cell's best design point, and the best so far among its
    design points and the grown points every planned seed has run (the runner plans further growth, or test seeds,
    from it), with the selection's own noise (:func:`selection_noise`)."""
    by_cell: dict[str, dict[Point, list[dict[str, Any]]]] = {}
    for row in grown:
        by_cell.setdefault(row["cell"], {}).setdefault(row["point"], []).append(row)
    lines = [
        f"Grown search (the growth rule: {GROWTH_RULE}), mean best dev × 100 over the search seeds:",
        "",
        "| cell | first winner (dev) | grown points | best so far | best − runner-up | each search seed's best |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for cell, points in by_cell.items():
        design: dict[Point, list[dict[str, Any]]] = {}
        for row in search:
            if row["cell"] == cell:
                design.setdefault(row["point"], []).append(row)
        planned = seeds.get(cell, 1)
        complete = {label: runs for label, runs in points.items() if len({r["seed"] for r in runs}) >= planned}
        candidates = design | complete
        means = {point: 100 * statistics.mean(r["best_dev"] for r in runs) for point, runs in candidates.items()}
        first = max((k for k in means if k in design), key=means.__getitem__, default=None)
        leader = max(means, key=means.__getitem__, default=None)
        texts = []
        for label, runs in points.items():
            ran = len({r["seed"] for r in runs})
            text = f"{label}: {100 * statistics.mean(r['best_dev'] for r in runs):.2f}"
            text += "†" * any(r["last_step"] for r in runs)
            texts.append(text + ("" if ran >= planned else f" ({ran} of {planned} seeds)"))
        shown = "—" if first is None else f"{point_name(first)} ({means[first]:.2f})"
        margin, agreement = selection_noise(candidates, means, leader, planned)
        lead = "—" if leader is None else point_name(leader)
        lines.append(f"| {cell} | {shown} | {'; '.join(texts)} | {lead} | {margin} | {agreement} |")
    return "\n".join(lines)


def point_name(point: Point) -> str:
    """``point 3`` for a design point, its label (``3x2``) for a grown one."""
    return f"point {point}" if isinstance(point, int) else point


def selection_noise(
    found: dict[Point, list[dict[str, Any]]], means: dict[Point, float], best: Point | None, seeds: int
) -> tuple[str, str]:
    """The selection's own noise: the ``best`` point's mean dev margin over the runner-up (``means``, × 100), and
    where the cell has two or more search ``seeds``, the point each seed alone would choose (``found``: point → its
    runs); ``—`` for what cannot be read yet."""
    others = [point for point in means if point != best]
    if best is None or not others:
        return "—", "—"
    runner_up = max(others, key=means.__getitem__)
    margin = f"{means[best] - means[runner_up]:+.2f} ({point_name(runner_up)})"
    if seeds < 2:
        return margin, "—"
    return margin, ", ".join(f"{seed}: {point_name(point)}" for seed, point in seed_winners(found).items())


def with_base_mean(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The transfer scores with the base model's mean over its probe seeds first (``base``: what every change is
    read against)."""
    probes = [found for name, found in scores.items() if name.startswith("base-probe")]
    if not probes:
        return scores
    return {"base": {task: statistics.mean(found[task] for found in probes) for task in probes[0]}} | scores


def search_table(search: list[dict[str, Any]], points: int, seeds: dict[str, int]) -> str:
    """Each cell's score per design point (mean best dev × 100 over the search seeds that have run), the winner in
    bold once every point has run with all of its cell's ``seeds`` (cell → how many search seeds its block plans),
    † where a search seed of the winner kept its last step; then the selection's own noise: the winner's dev margin
    over the runner-up, and where the cell has two or more search seeds, the point each seed alone would choose."""
    by_cell: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for row in search:
        by_cell.setdefault(row["cell"], {}).setdefault(row["point"], []).append(row)
    header = ["cell", *(f"point {k}" for k in range(points)), "winner − runner-up", "each search seed's winner"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for cell, found in by_cell.items():
        means = {k: 100 * statistics.mean(r["best_dev"] for r in runs) for k, runs in found.items()}
        complete = len(found) == points and all(len(runs) == seeds[cell] for runs in found.values())
        best = max(means, key=means.__getitem__) if complete else None
        texts = []
        for k in range(points):
            text = f"{means[k]:.2f}" if k in means else "—"
            if k == best:
                text = f"**{text}**" + "†" * any(r["last_step"] for r in found[k])
            texts.append(text)
        margin, agreement = selection_noise(dict(found), dict(means), best, seeds[cell])
        lines.append(f"| {cell} | " + " | ".join(texts) + f" | {margin} | {agreement} |")
    return "\n".join(lines)


def seed_winners(found: dict[Point, list[dict[str, Any]]]) -> dict[int, Point]:
    """Search seed → the point that seed's best dev score alone would choose (``found``: point → its runs)."""
    by_seed: dict[int, dict[Point, float]] = {}
    for point, runs in found.items():
        for run in runs:
            by_seed.setdefault(run["seed"], {})[point] = run["best_dev"]
    return {seed: max(scores, key=scores.__getitem__) for seed, scores in sorted(by_seed.items())}


def comparison_table(corrected: dict[tuple[str, str], Corrected]) -> str:
    """Pearson − each other loss at each front-page level: the uncorrected 95 % interval, Bonferroni's simultaneous
    interval over the planned family, and Holm's decision with its adjusted p-value."""
    label = simultaneous_label(planned_comparisons())
    header = ["level", "Pearson − loss", "seeds", "95 % (uncorrected)", label, "p", "Holm p", "Holm rejects"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for (block, loss), found in corrected.items():
        lines.append(
            f"| {block} | {loss} | {found.plain.n_a} | {interval(found.plain)} | {interval(found.simultaneous)} "
            f"| {found.holm.p:.4f} | {found.holm.adjusted:.4f} | {'yes' if found.holm.rejected else 'no'} |"
        )
    return "\n".join(lines)


def wide_verdicts(found: dict[str, Any], corrected: dict[tuple[str, str], Corrected]) -> list[str]:
    """The wide search's verdict lines: its comparisons (:func:`comparison_verdicts`), then, for each block whose
    transfer evaluations have all run, its models against the base model's noise floor."""
    transferred = [block["block"] for block in found["progress"] if 0 < block["transfer"][0] == block["transfer"][1]]
    return comparison_verdicts(found, corrected) + transfer_floor(found["transfer"], transferred)


def comparison_verdicts(found: dict[str, Any], corrected: dict[tuple[str, str], Corrected]) -> list[str]:
    """Each comparison of the ``corrected`` family (``comparisons.wide_family``), called as ``Corrected.decision``
    reads it (B: Pearson, A: the other loss); then the complete blocks off the front page
    (``comparisons.outside_family``) and the level contrasts (``comparisons.level_contrasts``), uncorrected."""
    lines = []
    for (block, loss), result in corrected.items():
        lines.append(
            f"- **wide, {block}**, Pearson − {loss} over {result.plain.n_a} paired seeds: {interval(result.plain)} "
            f"(95 %, uncorrected), {interval(result.simultaneous)} ({result.method}), Holm's adjusted p "
            f"{result.holm.adjusted:.4f}: {result.decision(loss, 'Pearson')}"
        )
    complete = wide.complete_blocks(found["progress"])
    settled = {block["block"] for block in found["progress"] if block["settled"]}
    first = before_growth(found)["rows"]
    contrasts = level_contrasts(found["rows"], complete, first, settled)
    return lines + outside_family(found["rows"], complete, settled) + contrasts
