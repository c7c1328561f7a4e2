"""The decoder claim's tables from its records: a row per stage-1 build and test run (and decoder_full's contrastive
stage-2 seeds), the search's table, the progress, the verdict in words, the plot and the front page's words."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from reproductions._common import ROOT, Rows, kept, pair_counts
from reproductions.decoder_full.decoder_full import stage2_record
from reproductions.decoder_losses.design import (
    BEFORE_SPEED,
    CONTRASTIVE,
    DECODER_FULL,
    HERE,
    LABELS,
    LOSSES,
    REBUILD_TOLERANCE,
    SEARCH_SEED,
    TASKS,
    TEST_SEEDS,
    alike,
    first_points,
    losses,
    progress,
    records,
    search_plan,
    search_record,
    seeds_of,
    stage1_avg,
    test_record,
    winner,
)
from reproductions.decoder_losses.search import best_dev

from pcctune.data.tasks import SHORT_NAMES
from pcctune.evaluation.tables import mean_std_cell
from pcctune.io import write_text
from pcctune.results import Difference, RunResult


def device_of(result: RunResult) -> str:
    """Where a record was computed (``versions.device``: ``cuda: GPU`` or ``cpu: …``), without the CPU's flags: a
    CPU keeps its vendor, family and model beside its name (``CPU: AuthenticAMD family 26 model 2 (AMD EPYC)``), as
    one name covers CPU generations that compute at other speeds and with other kernels."""
    device = result.versions.get("device")
    if device is None:
        return "not recorded"
    kind, _, name = device.partition(": ")
    return f"{kind.upper()}: {name.split('; flags:')[0]}"


def run_row(label: str, kind: str, result: RunResult, stage: str, stage1: float) -> dict[str, Any]:
    """One record's row: its scores after ``stage``, the stage-1 average it continues, and what it cost."""
    record = next((s for s in result.stages if s.stage == stage), None)
    row = {"label": label, "kind": kind, "seed": result.seed, "stage1_avg": stage1, "device": device_of(result)}
    row |= {"best_dev": record and record.best_dev_spearman, "train_seconds": record and record.wall_time_s}
    schedule = result.config["stages"][-1]
    row |= {"learning_rate": record and schedule["learning_rate"], "steps": record and schedule.get("max_steps")}
    row |= {"eval_seconds": result.eval_wall_time_s.get(stage), "pairs": pair_counts(result)}
    return row | {"sts": result.sts_by_stage[stage]}


def collect(args: argparse.Namespace) -> Rows:
    """The stage-1 build(s) with decoder_full's build before the speed settings, every test-seed run, and
    decoder_full's contrastive stage-2 seeds, as rows."""
    rows: Rows = []
    first = kept(records(args) / "stage1.json")
    if first is not None:
        stage = next(iter(first.sts_by_stage))
        for name in ("stage1", "stage1_rebuilt"):
            result = kept(records(args) / f"{name}.json")
            if result is not None:
                rows.append(run_row(name, "stage1", result, stage, stage1_avg(first)))
        for loss in LOSSES:
            for seed in TEST_SEEDS:
                result = kept(test_record(args, loss, seed))
                if result is not None:
                    rows.append(run_row(f"{loss}-seed{seed}", loss, result, loss, stage1_avg(first)))
    before = kept(DECODER_FULL / BEFORE_SPEED[0])
    if before is not None and first is not None and not args.quick:  # --quick's tiny decoder is another model
        rows.append(run_row("stage1_before_speed", "stage1", before, BEFORE_SPEED[1], stage1_avg(first)))
    own_stage1 = kept(DECODER_FULL / "seed1.json")
    for seed in TEST_SEEDS:
        result = stage2_record(DECODER_FULL, seed, CONTRASTIVE)
        if result is not None and own_stage1 is not None:
            before = float(own_stage1.sts_by_stage["contrastive-nli"]["avg"])
            rows.append(run_row(f"contrastive-seed{seed}", CONTRASTIVE, result, "pcc-contrastive", before))
    return rows


def search_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every search run the records call for: loss, learning rate, steps, seed, best dev score and whether it came
    at the last dev evaluation, where it ran and its training time (``None`` for a run without its record yet)."""
    rows = []
    for loss, points in search_plan(args).items():
        for rate, steps in points:
            result = kept(search_record(args, loss, (rate, steps)))
            row: dict[str, Any] = {"loss": loss, "learning_rate": rate, "steps": steps, "best_dev": None}
            if result is not None:
                stage = result.stages[0]
                row |= {"seed": result.seed, "best_dev": best_dev(result), "at_last": stage.best_at_last_evaluation}
                row |= {"device": device_of(result), "train_seconds": stage.wall_time_s}
            rows.append(row)
    return rows


def details_of(args: argparse.Namespace) -> dict[str, Any]:
    first = first_points(args)
    found = {"search": search_rows(args), "rates": sorted(rate for rate, _ in first), "first_steps": first[0][1]}
    found["winners"] = {loss: winner(args, loss) for loss in losses(args)}
    found |= {"search_seed": SEARCH_SEED, "test_seeds": list(TEST_SEEDS)}
    return found | {"progress": progress(args)}


SETTINGS = (
    "SmolLM2-135M, the recipe's stage 1 (configs/paper_recipe_smollm2_cpu.yaml, seed 1, its last step), continued at "
    "leakage level pair by Pearson, cosine-MSE and CoSENT, each searched alike over four learning rates and a grown "
    "schedule on the "
    f"pair-filtered dev sets (seed {SEARCH_SEED}), each winner over seeds 1-3; papers' protocol on the seven full "
    "test sets; the contrastive rows from reproductions/decoder_full/records"
)


def update_front_page(args: argparse.Namespace) -> None:
    """The front page's words on this claim (:func:`write_front_page`), where the records are this claim's own."""
    if not args.quick and Path(args.output).resolve() == HERE:
        write_front_page(ROOT / "README.md", front_page_phrase(args))


FRONT_PAGE_START, FRONT_PAGE_END = "against cosine-MSE and CoSENT", ". Every claim,"
"""Where the front page's words on this claim begin, and what follows them."""


def front_page_phrase(args: argparse.Namespace) -> str:
    """The front page's words on this claim, from the records: how many have landed until every planned run has,
    then the verdict (held, or the loss that ties or beats Pearson) with Pearson's paired differences."""
    counts = progress(args)
    done, planned = sum(count for _, count, _ in counts), sum(total for *_, total in counts)
    if done == 0:
        return (
            f"{FRONT_PAGE_START} it has **no result yet** (`reproductions/decoder_losses`: {done} of {planned} "
            "records; its runs go on the CPU in the background, stage 1 first)"
        )
    if done < planned:
        return (
            f"{FRONT_PAGE_START} its runs are **under way**, no verdict yet (`reproductions/decoder_losses`: {done} "
            f"of {planned} records)"
        )
    first, *rest = verdict(collect(args))
    compared = "; ".join(line.removeprefix("- ") for line in rest[: len(LOSSES) - 1])
    return f"{FRONT_PAGE_START} (`reproductions/decoder_losses`, {len(seeds_of(args))} seeds): {first} {compared}"


def write_front_page(readme: Path, phrase: str) -> None:
    """``phrase`` written over the front page's words on this claim (from :data:`FRONT_PAGE_START` to
    :data:`FRONT_PAGE_END`)."""
    text = readme.read_text(encoding="utf-8")
    start = text.index(FRONT_PAGE_START)
    end = text.index(FRONT_PAGE_END, start)
    write_text(readme, text[:start] + phrase + text[end:])


def groups(rows: Rows) -> dict[str, Rows]:
    """The rows of each kind (stage 1, each loss, the contrastive stage 2), in the table's order."""
    return {kind: [row for row in rows if row["kind"] == kind] for kind in ("stage1", *LOSSES, CONTRASTIVE)}


def seed_averages(rows: Rows) -> dict[int, float]:
    """Each run's seven-task average by its seed: one side of :func:`seed_difference`."""
    return {row["seed"]: row["sts"]["avg"] for row in rows}


def over_stage1(rows: Rows) -> Difference:
    """The runs' averages minus the stage-1 model they all continue, paired by seed: the one stage-1 model stands
    on the other side of every seed, so the interval is that of the seeds' spread."""
    from pcctune.evaluation.compare import seed_difference

    return seed_difference({row["seed"]: row["stage1_avg"] for row in rows}, seed_averages(rows))


def pearson_minus(pearson: Rows, other: Rows, kind: str) -> Difference:
    """Pearson's averages − ``other``'s: paired by seed where both continue this claim's stage 1; unpaired (Welch's
    t) for the contrastive stage 2, which continues ``decoder_full``'s build of stage 1, so that its seed k shares
    no stage-1 model with Pearson's seed k (its seeds are set apart, so none pairs)."""
    from pcctune.evaluation.compare import seed_difference

    others = seed_averages(other)
    if kind == CONTRASTIVE:
        others = {-1 - seed: average for seed, average in others.items()}
    return seed_difference(others, seed_averages(pearson))


def _difference_cell(difference: Difference) -> str:
    ends = f" [{difference.low:+.2f}, {difference.high:+.2f}]" if difference.low is not None else ""
    return f"{difference.mean:+.2f}{ends}"


def _where(rows: Rows) -> str:
    return " / ".join(dict.fromkeys(row["device"] for row in rows))


def score_table(rows: Rows) -> list[str]:
    """Per row: seeds, learning rate, dev, the seven tasks and the average (mean ± std over seeds), the difference
    from the stage-1 model continued and Pearson's difference from the row (95 % intervals over paired seeds; the
    contrastive stage 2's unpaired, :func:`pearson_minus`)."""
    header = ["row", "seeds", "lr, steps", "dev", *[SHORT_NAMES[task] for task in TASKS], "avg", "− stage 1"]
    header += ["Pearson − row", "ran on"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    found = groups(rows)
    for kind, group in found.items():
        if kind == "stage1":
            for row in group:
                label = STAGE1_LABELS[row["label"]]
                scores = " | ".join(f"{row['sts'][task]:.2f}" for task in [*TASKS, "avg"])
                lines.append(f"| {label} | 1 | — | — | {scores} | — | — | {row['device']} |")
            if not group:
                lines.append(f"| {LABELS['stage1']} | not run yet |" + " |" * (len(header) - 2))
            continue
        if not group:
            lines.append(f"| {LABELS[kind]} | not run yet |" + " |" * (len(header) - 2))
            continue
        rates = " / ".join(dict.fromkeys(f"{row['learning_rate']:.1e}, {row['steps']}" for row in group))
        devs = [100 * row["best_dev"] for row in group if row["best_dev"] is not None]
        scores = " | ".join(mean_std_cell([row["sts"][task] for row in group]) for task in [*TASKS, "avg"])
        versus = (
            "—"
            if kind == "pearson" or not found["pearson"]
            else _difference_cell(pearson_minus(found["pearson"], group, kind))
        )
        cells = [str(len(group)), rates, mean_std_cell(devs) if devs else "—", scores]
        cells += [_difference_cell(over_stage1(group)), versus, _where(group)]
        lines.append(f"| {LABELS[kind]} | " + " | ".join(cells) + " |")
    return lines


def search_table(details: dict[str, Any]) -> list[str]:
    """Best dev score (Spearman × 100) of each loss at each learning rate of the first points (the recipe's steps),
    then at its grown schedules; each loss's winner in bold once the whole search has its records (``design.winner``),
    † where a run was best at its last dev evaluation (its schedule had not finished)."""
    rates, first_steps = details["rates"], details["first_steps"]
    header = ["loss", *[f"lr {rate:.1e}" for rate in rates], "grown schedule", "ran on"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for loss in LOSSES:
        runs = [row for row in details["search"] if row["loss"] == loss]
        done = [row for row in runs if row["best_dev"] is not None]
        chosen = details.get("winners", {}).get(loss)
        best = next((row for row in done if chosen and (row["learning_rate"], row["steps"]) == tuple(chosen)), None)
        first = {row["learning_rate"]: row for row in runs if row["steps"] == first_steps}
        grown = [
            f"{row['learning_rate']:.1e}, {row['steps']} steps: {_search_cell(row, best)}"
            for row in runs
            if row["steps"] != first_steps
        ]
        cells = [*[_search_cell(first.get(rate), best) for rate in rates], "; ".join(grown) or "—"]
        cells.append(_where(done) or "—")
        lines.append(f"| {loss} | " + " | ".join(cells) + " |")
    return lines + ["", f"† best at its last dev evaluation; the first points have the recipe's {first_steps} steps."]


def _search_cell(row: dict[str, Any] | None, best: dict[str, Any] | None) -> str:
    if row is None or row["best_dev"] is None:
        return "not run yet"
    text = f"{100 * row['best_dev']:.2f}" + ("†" if row.get("at_last") else "")
    return f"**{text}**" if row is best else text


NAMES = {"cosine_mse": "cosine-MSE", "cosent": "CoSENT", CONTRASTIVE: "the contrastive stage 2"}
STAGE1_LABELS = {
    "stage1": LABELS["stage1"],
    "stage1_rebuilt": f"{LABELS['stage1']}, built again",
    "stage1_before_speed": f"{LABELS['stage1']}, decoder_full's build before the speed settings",
}


def speed_check(stage1_rows: Rows) -> list[str]:
    """This claim's stage 1 (built under :data:`SPEED`) against ``decoder_full``'s build before them: within
    :data:`REBUILD_TOLERANCE` of its average, or by how much not."""
    found = {row["label"]: row["sts"]["avg"] for row in stage1_rows}
    if not {"stage1", "stage1_before_speed"} <= found.keys():
        return []
    ours, before = found["stage1"], found["stage1_before_speed"]
    within = "within" if alike(ours, before) else "outside"
    return [
        f"- stage 1 built under the speed settings: {ours:.2f} against {before:.2f} for decoder_full's build before "
        f"them, {ours - before:+.2f}: {within} the {REBUILD_TOLERANCE} this claim allows"
    ]


def verdict(rows: Rows, complete: bool = True) -> list[str]:
    """The verdict in words, from the records: held where Pearson's interval over paired seeds lies above both
    cosine-MSE and CoSENT, not held where either ties with it (the interval holds 0) or beats it, and nothing decided
    before every test run has its record (``complete``); then every comparison so far, and each stage-2 row against
    the stage-1 model it continues."""
    found = groups(rows)
    pearson = found["pearson"]
    compared = {
        kind: pearson_minus(pearson, found[kind], kind)
        for kind in (*LOSSES[1:], CONTRASTIVE)
        if pearson and found[kind]
    }
    rivals = {loss: compared.get(loss) for loss in LOSSES[1:]}
    decided = {loss: d.verdict for loss, d in rivals.items() if d is not None and d.verdict is not None}
    if not pearson:
        lines = ["**not run yet**: Pearson's stage 2 has no record yet."]
    elif not complete:
        lines = ["**not decided yet**: not every test run has its record (Progress above); the differences so far:"]
    elif len(decided) < len(rivals):
        lines = ["**not decided yet**: cosine-MSE and CoSENT each need two seeds beside Pearson's."]
    elif all(outcome == "win" for outcome in decided.values()):
        lines = ["**held**: Pearson's stage 2 beats cosine-MSE and CoSENT (each interval over paired seeds above 0)."]
    else:
        lost = [
            f"a tie with {NAMES[loss]}" if outcome == "tie" else f"{NAMES[loss]} above it"
            for loss, outcome in decided.items()
            if outcome != "win"
        ]
        lines = [f"**not held**: Pearson's stage 2 does not beat both: {', '.join(lost)}."]
    lines += [f"- {difference.sentence(NAMES[kind], 'Pearson')}" for kind, difference in compared.items()]
    for kind, group in found.items():
        if kind != "stage1" and group:
            lines.append(f"- {over_stage1(group).sentence('its stage 1', LABELS[kind])}")
    return lines + speed_check(found["stage1"])


def table(rows: Rows, details: dict[str, Any]) -> str:
    """The scores' table, the search's table, the progress and the verdict, all from the records."""
    search = ["", f"Search (seed {details['search_seed']}, best dev Spearman × 100, dev sets filtered at pair):", ""]
    lead = "Progress (runs with a record; `python -m reproductions decoder_losses --rerun` runs the missing ones in "
    lead += "order, a run cut off resuming from its last checkpoint, and rewrites this table):"
    done = ["", lead, "", "| part | records | planned |", "| --- | --- | --- |"]
    progress = details.get("progress", [])
    done += [f"| {part} | {count} | {planned} |" for part, count, planned in progress]
    complete = all(count == planned for part, count, planned in progress if part == "test runs")
    return "\n".join([*score_table(rows), *search, *search_table(details), *done, "", *verdict(rows, complete)])


def plot(rows: Rows, details: dict[str, Any], path: Path) -> None:
    """The seven-task average of each row: a bar at the mean, a dot per seed; this claim's stage 1 dashed; the axis
    starts 2 points below the lowest average, so that the differences show."""
    from pcctune.plotting import save_figure, subplots

    figure, ax = subplots(figsize=(8, 3.6))
    found = groups(rows)
    shown = [kind for kind in (*LOSSES, CONTRASTIVE) if found[kind]]
    for y, kind in enumerate(shown):
        values = [row["sts"]["avg"] for row in found[kind]]
        ax.barh(y, statistics.mean(values), color=f"C{y}", alpha=0.5)
        ax.plot(values, [y] * len(values), "k.", ms=4)
    for row in found["stage1"][:1]:
        ax.axvline(row["sts"]["avg"], color="grey", linestyle="--", label=f"stage 1 ({row['sts']['avg']:.2f})")
        ax.legend(fontsize=8)
    ax.set_yticks(range(len(shown)), [LABELS[kind] for kind in shown])
    if not shown:
        ax.text(0.5, 0.5, "no stage-2 run yet", ha="center", transform=ax.transAxes)
    if rows:
        ax.set_xlim(left=max(0.0, min(row["sts"]["avg"] for row in rows) - 2))
    ax.set(xlabel="avg Spearman × 100 (papers' protocol, 7 STS tasks)", title="SmolLM2-135M stage 2 after stage 1")
    save_figure(figure, path)
