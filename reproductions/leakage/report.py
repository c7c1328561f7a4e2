"""The leakage grid's records read out: ``table.md``, ``verdict.md`` and ``leakage.png`` for both searches (the
narrow search's tables here, the wide search's in ``wide_tables``), and the front page's table (``readme_rows``)
and verdict, which take a level from the wide search once that level is complete."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from reproductions._common import ROOT, Rows
from reproductions.leakage import narrow, wide
from reproductions.leakage.cells import (
    HERE,
    LOSSES,
    MINILM,
    MPNET,
    PAIR,
    SENTENCE,
    SHORT,
    TASKS,
    base_scores,
    cell_text,
    groups,
    seed_averages,
)
from reproductions.leakage.comparisons import (
    FRONT_PAGE,
    interval,
    planned_comparisons,
    wide_family,
)
from reproductions.leakage.growth import GrownPoint, Point
from reproductions.leakage.wide_tables import (
    before_growth,
    comparison_verdicts,
    transfer_table,
    wide_table,
    wide_verdicts,
)

from pcctune.data.leakage import LEVELS, LeakageLevel
from pcctune.evaluation.multiple import Corrected, simultaneous_label
from pcctune.io import write_text


def summary_details(args: argparse.Namespace) -> dict[str, Any]:
    """What the table and verdict read besides the seed runs: the search's trials and the transfer scores, and the
    wide search's (:func:`reproductions.leakage.wide.details`)."""
    found = {
        "search": narrow.search_rows(args),
        "trials": list(narrow.TRIALS),
        "transfer": narrow.transfer_scores(args),
    }
    return found | {"wide": wide.details(args)}


def transfer_verdicts(scores: dict[str, dict[str, float]]) -> list[str]:
    """Per searched level: each loss's best model's transfer average minus the base model's (one model each)."""
    if "base" not in scores:
        return []
    base = scores["base"]["avg"]
    lines = []
    for level in (SENTENCE, PAIR):
        prefix = f"minilm-{level.value}-"
        changes = [
            f"{name.removeprefix(prefix).rsplit('-seed', 1)[0]} {found['avg'] - base:+.2f}"
            for name, found in scores.items()
            if name.startswith(prefix)
        ]
        if changes:
            lines.append(
                f"- **transfer, {level.value}** (seven SentEval tasks, scikit-learn's probe; each loss's best model by "
                f"dev, one model each, no interval): average minus the base model's {base:.2f}: " + ", ".join(changes)
            )
    return lines


def base_rows(rows: Rows) -> list[str]:
    """The table's rows of the models before training: all-MiniLM-L6-v2's, and all-mpnet-base-v2's once it has
    rows."""
    lines = []
    for model in (MINILM, *([MPNET] if any(row["model"] == "mpnet" for row in rows) else [])):
        base = base_scores(model)
        scores = " | ".join(f"{base[task]:.2f}" for task in [*TASKS, "avg"])
        lines.append(f"| {model} before training | — | — | — | — | {scores} | — |")
    return lines


def table(rows: Rows, details: dict[str, Any]) -> str:
    """Per cell: training pairs, dev pairs, seeds, mean dev, the seven tasks and the average (mean ± std over
    seeds), and the winning settings; then the transfer tasks' table where ``details`` has their scores, and the
    wide search's section where it has the wide search's."""
    header = ["cell", "train pairs", "dev pairs", "seeds", "dev", *SHORT, "avg", "lr / batch / warm-up / epochs"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += base_rows(rows)
    for cell, group in groups(rows).items():
        cells = " | ".join(cell_text([r["sts"][task] for r in group]) for task in [*TASKS, "avg"])
        dev = cell_text([100 * r["best_dev"] for r in group])
        dev_pairs = "+".join(f"{n}" for n in group[0]["dev_pairs"].values()) or "—"
        s = group[0]["settings"]
        chosen = f"{s['learning_rate']:.1e} / {s['batch_size']} / {s['warmup_ratio']:g} / {s['epochs']:g}"
        lines.append(
            f"| {cell} | {group[0]['train_examples']} | {dev_pairs} | {len(group)} | {dev} | {cells} | {chosen} |"
        )
    if details.get("transfer"):
        lines += ["", "Transfer tasks, accuracy %:", "", transfer_table(details["transfer"])]
    if "wide" in details:
        lines += ["", wide_table(details["wide"], wide_family(details["wide"]))]
    return "\n".join(lines)


def verdicts(rows: Rows) -> list[str]:
    """At each level and for the control (the narrow search): Pearson against the best other loss (by mean dev), the
    difference of the seven-task average with its uncorrected 95 % interval over paired seeds, in words, said to be
    uncorrected; then against each other loss alike."""
    from pcctune.evaluation.compare import seed_difference

    found = groups(rows)
    lines = []
    prefixes = ("minilm-sentence", "minilm-pair", "minilm-pair-control", "minilm-normalized", "minilm-near")
    for prefix in (*prefixes, "mpnet-sentence", "mpnet-pair"):
        cells = {cell.removeprefix(prefix + "-"): group for cell, group in found.items() if cell.startswith(prefix)}
        cells = {loss: group for loss, group in cells.items() if loss in LOSSES}
        if "pearson" not in cells or len(cells) < 2:
            continue
        dev_means = {  # over the first seeds, as the runner chose the best other loss (narrow.best_other)
            loss: statistics.mean(r["best_dev"] for r in g if r["seed"] in narrow.SEEDS)
            for loss, g in cells.items()
            if loss != "pearson"
        }
        other = max(dev_means, key=dev_means.__getitem__)
        pearson, rival = seed_averages(cells["pearson"]), seed_averages(cells[other])
        if len(pearson) < 2 or len(rival) < 2:
            continue
        difference = seed_difference(rival, pearson)
        said = f"(narrow search, best other loss on dev: {other}; 95 %, uncorrected)"
        lines.append(f"- **{prefix}** {said}: {difference.sentence(other, 'Pearson')}")
        for loss in sorted(set(cells) - {"pearson", other}):
            runs = seed_averages(cells[loss])
            if len(runs) >= 2:
                lines.append(f"  - against {loss}: {seed_difference(runs, pearson).sentence(loss, 'Pearson')}")
    return lines


LABELS = {
    "pearson": "Pearson (Pcc-tuning)",
    "cosine_mse": "cosine-MSE (ST's CosineSimilarityLoss)",
    "cosent": "CoSENT",
    "angle": "AnglE",
    "contrastive": "contrastive stage 2 (§4.3)",
}
"""Each loss's row label in the front page's table."""
NAMES = {"cosine_mse": "cosine-MSE", "cosent": "CoSENT", "angle": "AnglE", "contrastive": "the contrastive stage 2"}
"""Each other loss's name in the front page's verdict."""


def front_page(levels: tuple[str, ...] = FRONT_PAGE) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The wide search's records as :func:`reproductions.leakage.wide.details` finds them, and those of ``levels``
    that are complete: the front page reads a level only then."""
    found = wide.details(argparse.Namespace(output=HERE, model=None, losses=list(LOSSES)))
    complete = wide.complete_blocks(found["progress"])
    return found, tuple(level for level in levels if level in complete)


def readme_rows(levels: tuple[str, ...] = FRONT_PAGE) -> dict[str, list[str]]:
    """The front page's table, from the wide search's records: its header (``loss``), then per loss at each complete
    level the seven-task average over the test seeds (mean ± std) and Pearson − the loss with Bonferroni's
    simultaneous interval over the planned family, named in the header."""
    found, levels = front_page(levels)
    corrected, by_cell = wide_family(found), groups(found["rows"])
    label = simultaneous_label(planned_comparisons())
    rows = {"loss": [f"`{level}`: avg, Pearson − loss [{label}]" for level in levels]}
    for loss in LOSSES:
        cells = []
        for level in levels:
            text = cell_text([r["sts"]["avg"] for r in by_cell[f"minilm-{level}-{loss}"]])
            if (level, loss) in corrected:
                text += f"; {interval(corrected[(level, loss)].simultaneous)}"
            cells.append(text)
        rows[LABELS[loss]] = cells
    return rows


RUN_PARTS = {"search": "search runs", "test": "test runs", "growth": "grown-search runs"}
"""The parts of a block's plan (``wide.progress``) the front page counts for a level it does not read, and their
names there."""


def readme_verdict(levels: tuple[str, ...] = FRONT_PAGE) -> str:
    """The front page's verdict, from the wide search's records: one sentence of Holm's decisions
    (:func:`decided_phrases`), then one of what the records show besides (:func:`caveats`)."""
    found, levels = front_page(levels)
    corrected, by_cell = wide_family(found), groups(found["rows"])
    searched = ", ".join(f"{seed_span(found['seeds']['search'][level])} at `{level}`" for level in levels)
    family = planned_comparisons()
    return (
        f"**Verdict on the encoder** (all-MiniLM-L6-v2, {len(found['design'])} settings per loss"
        f"{grown_winners(by_cell, levels)}, search seeds {searched}, test seeds {seed_span(found['seeds']['test'])}; "
        f"Holm over the {family} planned comparisons; intervals {simultaneous_label(family)}): Pearson "
        + ", and ".join(decided_phrases(corrected, levels))
        + ". "
        + caveats(found, by_cell, levels)
        + " "
        + coverage(found["progress"], levels)
    )


def coverage(blocks: list[dict[str, Any]], levels: tuple[str, ...]) -> str:
    """The sentence saying which leakage levels the verdict covers, and of the others (Pearson and cosine-MSE alone,
    outside the planned family) what is still to run: each unfinished part's records out of its plan, and a grown
    search its records have not settled yet, from :func:`reproductions.leakage.wide.progress`'s ``blocks``."""
    others = []
    for block in blocks:
        if block["block"] in levels or block["block"] not in LEVELS:
            continue
        left = [
            f"{block[part][0]} of {block[part][1]} {runs}"
            for part, runs in RUN_PARTS.items()
            if block[part][0] < block[part][1]
        ]
        if left:
            others.append(f"`{block['block']}` ({', '.join(left)} so far)")
        else:
            others.append(f"`{block['block']}`" + " (its grown search not settled yet)" * (not block["settled"]))
    covered = f"The verdict covers {' and '.join(f'`{level}`' for level in levels)}"
    if not others:
        return covered + "."
    verb = "compare" if len(others) > 1 else "compares"
    return f"{covered}; {listed(others)} {verb} Pearson with cosine-MSE alone, outside the planned family."


def grown_winners(by_cell: dict[str, list[dict[str, Any]]], levels: tuple[str, ...]) -> str:
    """The clause naming the winners at ``levels`` that are grown points, level by level (`` and their growth where
    a winner binds (Pearson's 3x2 and CoSENT's 3x8 at `sentence`)``); empty while none is."""
    by_level = []
    for level in levels:
        grown = [
            f"{NAMES.get(loss, 'Pearson')}'s {runs[0]['point']}"
            for loss in LOSSES
            if (runs := by_cell.get(f"minilm-{level}-{loss}")) and not isinstance(runs[0]["point"], int)
        ]
        if grown:
            by_level.append(f"{listed(grown)} at `{level}`")
    return f" and their growth where a winner binds ({'; '.join(by_level)})" if by_level else ""


def decided_phrases(corrected: dict[tuple[str, str], Corrected], levels: tuple[str, ...]) -> list[str]:
    """Holm's decisions in Pearson's voice, loss by loss over ``levels``: the losses it ties at every level (with
    the widest simultaneous bound: not an equivalence), those it beats at every level where Holm rejects (by the
    size of the simultaneous interval, or its sign only), those it loses to the same way, and for a loss whose
    decisions differ between levels, each level's."""
    ties: list[str] = []
    wins: list[str] = []
    defeats: list[str] = []
    mixed: list[str] = []
    for loss in LOSSES[1:]:
        results = {level: corrected[(level, loss)] for level in levels}
        if not any(result.holm.rejected for result in results.values()):
            widest = max(results.values(), key=lambda result: result.simultaneous.high - result.simultaneous.low)
            ties.append(
                f"{NAMES[loss]} (widest interval [{widest.simultaneous.low:+.2f}, {widest.simultaneous.high:+.2f}])"
            )
            continue
        signs = {result.holm.rejected and (1 if result.plain.mean > 0 else -1) for result in results.values()}
        if signs in ({1}, {-1}):
            won = [f"`{level}`" for level, result in results.items() if short_decision(result) == "a win"]
            signed = [f"`{level}`" for level, result in results.items() if short_decision(result) != "a win"]
            where = [f"at {' and '.join(won)}"] if won else []
            where += [f"at {' and '.join(signed)} by its sign only"] if signed else []
            (wins if signs == {1} else defeats).append(f"{NAMES[loss]} ({'; '.join(where)})")
        else:
            each = [f"{level_decision(result)} at `{level}`" for level, result in results.items()]
            mixed.append(f"against {NAMES[loss]} {' and '.join(each)}")
    every = " and ".join(f"`{level}`" for level in levels)
    phrases = [f"ties {' and '.join(ties)} at {every}, a bound on the difference, not an equivalence"] if ties else []
    phrases += [f"{verb} {listed(found)}" for verb, found in (("beats", wins), ("loses to", defeats)) if found]
    return phrases + mixed


def listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def level_decision(result: Corrected) -> str:
    """One level's decision in Pearson's voice: wins or loses (by its sign only where the simultaneous interval
    holds 0), or ties, with the simultaneous bound."""
    if not result.holm.rejected:
        return f"ties ([{result.simultaneous.low:+.2f}, {result.simultaneous.high:+.2f}])"
    verb = "wins" if result.plain.mean > 0 else "loses"
    return verb if short_decision(result) == "a win" else f"{verb} by its sign only"


def seed_span(seeds: list[int]) -> str:
    """``101`` or ``101–102``: a run of consecutive seeds."""
    return f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"


def caveats(found: dict[str, Any], by_cell: dict[str, Rows], levels: tuple[str, ...]) -> str:
    """What the test runs show beside the decisions: the losses whose winners were best at their last step in most
    seeds, those below the base model, and those best at their first dev evaluation (a run that kept about what it
    had before training, ``wide.first_evaluation``). Not final while the grown search of a level is under way
    (``wide.growth_settled``: every loss there is read at its first winner until then); final otherwise, where a
    winner still best at its last step is as far as the growth rule takes it."""
    base = base_scores()["avg"]
    settled = {block["block"] for block in found.get("progress", []) if block["settled"]}
    binding, below, first = [], [], []
    for loss in LOSSES[1:]:
        for level in levels:
            runs = by_cell[f"minilm-{level}-{loss}"]
            last = sum(r["last_step"] for r in runs)
            if 2 * last > len(runs):
                where = ", the growth rule's limit" * (level in settled)
                binding.append(f"{NAMES[loss]} at `{level}` ({last} of {len(runs)}{where})")
            mean = statistics.mean(r["sts"]["avg"] for r in runs)
            if mean < base:
                below.append(f"{NAMES[loss]} at `{level}` ({mean:.2f})")
            early = sum(r["first_evaluation"] for r in runs)
            if early:
                first.append(f"{NAMES[loss]} at `{level}` ({early} of {len(runs)})")
    notes = []
    if binding:
        notes.append(f"best at their last step in most test seeds: {', '.join(binding)}")
    if below:
        notes.append(f"below the base model's {base:.2f}: {', '.join(below)}")
    if first:
        notes.append(f"best at their first dev evaluation, about the base model: {', '.join(first)}")
    growing = [f"`{level}`" for level in levels if level not in settled]
    if not growing:
        at_limit = " (the claim holds up to the largest schedule the growth rule tried)" * bool(binding)
        return ("Final" + at_limit + ": " + "; ".join(notes) + ".") if notes else "Final: no winner binds."
    return (
        f"Not final: the grown search at {' and '.join(growing)} is not complete, and until it is, every loss there "
        "is read at its first winner" + "".join(f"; {note}" for note in notes) + ". The search grows for every "
        "loss by the rule in the comparison's README, and this verdict is generated again from the records as it lands."
    )


def short_decision(result: Corrected) -> str:
    """Holm's decision in a few words: a win with its size, a win by its sign only, or a tie."""
    if not result.holm.rejected:
        return "a tie"
    return "a win" if result.simultaneous.verdict != "tie" else "a win by its sign only"


def write_summary(args: argparse.Namespace) -> None:
    """table.md, verdict.md and the plots, from the records as they are now (the search's rows go into runs.json):
    ``leakage.png`` (every cell's seeds), ``growth.png`` once the wide search has grown (:func:`growth_plot`) and,
    once a front-page level of the wide search is complete, ``wide.png`` (its family of comparisons), all into
    ``--output``, whose records they read; the front page only where that is the claim's own folder."""
    rows, out = narrow.collect(args), Path(args.output)
    if not rows:
        return
    found = summary_details(args)
    corrected = wide_family(found["wide"])
    write_text(out / "table.md", table(rows, found) + "\n")
    lines = verdicts(rows) + transfer_verdicts(found["transfer"]) + wide_verdicts(found["wide"], corrected)
    if found["wide"]["first_rows"] and corrected:
        first = before_growth(found["wide"])
        lines += ["", "Before the grown search replaced a winner (the first search's winners):", ""]
        lines += comparison_verdicts(first, wide_family(first))
    write_text(out / "verdict.md", "\n".join(lines) + "\n")
    plot(rows, {}, out / "leakage.png")
    if found["wide"]["growth"]:
        growth_plot(found["wide"], out / "growth.png")
    if corrected:
        family_plot(corrected, out / "wide.png")
        if out.resolve() == HERE:
            write_front_page(ROOT / "README.md")


def write_front_page(readme: Path) -> None:
    """The front page's results table (:func:`readme_rows`) and verdict (:func:`readme_verdict`) written over the
    ones ``readme`` holds, so the records that change them change the front page in the same step."""
    rows = readme_rows()
    table = ["| loss | " + " | ".join(rows.pop("loss")) + " |", "|" + " --- |" * 3]
    table += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows.items()]
    lines = readme.read_text(encoding="utf-8").split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith("| loss | `"))
    end = next(k for k in range(start, len(lines)) if not lines[k].startswith("|"))
    lines[start:end] = table
    verdict = next(k for k, line in enumerate(lines) if line.startswith("**Verdict on the encoder**"))
    lines[verdict] = readme_verdict()
    write_text(readme, "\n".join(lines))


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """all-MiniLM-L6-v2's seven-task average per loss and level: each seed a dot, the mean a bar, the base model
    dotted."""
    from pcctune.plotting import save_figure, subplots

    figure, ax = subplots(figsize=(8, 4.2))
    levels = [level.value for level in LeakageLevel]
    for offset, loss in enumerate(LOSSES):
        for x, level in enumerate(levels):
            key = ("minilm", level, loss, "stage2")
            values = [r["sts"]["avg"] for r in rows if (r["model"], r["level"], r["loss"], r["data"]) == key]
            if values:
                position = x + (offset - 2) * 0.15
                ax.bar(position, statistics.mean(values), width=0.14, color=f"C{offset}", alpha=0.5)
                ax.plot([position] * len(values), values, "k.", ms=3)
        ax.bar([], [], color=f"C{offset}", alpha=0.5, label=loss)
    ax.axhline(base_scores()["avg"], ls=":", c="gray", label="base model")
    low = min([r["sts"]["avg"] for r in rows] + [base_scores()["avg"]]) - 0.5
    ax.set_ylim(bottom=low)
    ax.set_xticks(range(len(levels)), levels)
    ax.set(xlabel="leakage filter level", ylabel="avg Spearman × 100, 7 STS tasks", title="all-MiniLM-L6-v2 stage 2")
    ax.legend(fontsize=8, ncol=3)
    save_figure(figure, path)


def family_plot(corrected: dict[tuple[str, str], Corrected], path: Path) -> None:
    """The wide search's family as a forest (``pcctune.evaluation.report.family_plot``): Pearson − each loss on the
    seven-task average, uncorrected 95 % (thick) and Bonferroni's simultaneous interval over the planned family
    (thin): a win with its size where the thin line clears 0."""
    from pcctune.evaluation.report import family_plot as forest

    forest(
        {f"{block}: Pearson − {loss}": (found.plain, found.simultaneous) for (block, loss), found in corrected.items()},
        path,
        title=f"wide search: 95 % (thick), {simultaneous_label(planned_comparisons())} (thin)",
        xlabel="difference of avg Spearman × 100 over paired test seeds",
    )


def growth_curves(found: dict[str, Any]) -> dict[str, dict[str, list[tuple[int, float, bool]]]]:
    """The grown search's points as curves: by block (``minilm-sentence``), by loss, each point that grew a first
    winner (the winner itself first) as (epochs, mean best dev × 100 over the search seeds, half the learning rate),
    sorted by epochs; a point is drawn once it has run on as many search seeds as the first winner."""
    curves: dict[str, dict[str, list[tuple[int, float, bool]]]] = {}
    for cell in dict.fromkeys(row["cell"] for row in found["growth"]):
        grown = [row for row in found["growth"] if row["cell"] == cell]
        base = GrownPoint.parse(grown[0]["point"]).base
        runs: dict[Point, list[dict[str, Any]]] = {}
        for row in [r for r in found["search"] if (r["cell"], r["point"]) == (cell, base)] + grown:
            runs.setdefault(row["point"], []).append(row)
        points = []
        for point, found_runs in runs.items():
            if len(found_runs) < len(runs[base]):
                continue
            half = isinstance(point, str) and GrownPoint.parse(point).half_rate
            mean = 100 * statistics.mean(run["best_dev"] for run in found_runs)
            points.append((found_runs[0]["settings"]["epochs"], mean, half))
        block, loss = cell.rsplit("-", 1)
        curves.setdefault(block, {})[loss] = sorted(points)
    return curves


def growth_plot(found: dict[str, Any], path: Path) -> None:
    """The grown search at a glance: per block, each loss's mean best dev against its schedule's epochs (log scale),
    its first winner and the points grown from it at the same learning rate joined by a line, the half-rate points
    hollow; a line still rising at its right end is a loss the space stopped too early."""
    from pcctune.plotting import save_figure, subplots

    curves = growth_curves(found)
    figure, axes = subplots(1, max(1, len(curves)), figsize=(5 * max(1, len(curves)), 3.8), squeeze=False)
    for ax, (block, losses) in zip(axes[0], curves.items(), strict=False):
        for k, (loss, points) in enumerate(losses.items()):
            full = [(epochs, mean) for epochs, mean, half in points if not half]
            ax.plot(*zip(*full, strict=True), "o-", c=f"C{k}", label=NAMES.get(loss, loss.capitalize()))
            halves = [(epochs, mean) for epochs, mean, half in points if half]
            if halves:
                ax.plot(*zip(*halves, strict=True), "o", mfc="none", c=f"C{k}")
        ax.set_xscale("log", base=2)
        ax.set(title=block, xlabel="epochs (hollow: half the learning rate)", ylabel="mean best dev × 100")
        ax.legend(fontsize=8)
    save_figure(figure, path)
