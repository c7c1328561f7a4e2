"""On a decoder after a contrastive stage 1, does the Pearson stage beat the losses a user would use instead?

Pcc-tuning claims its edge on decoder LLMs (Table 3): a contrastive stage I, then the Pearson loss (eq. 8). Here
SmolLM2-135M's stage 1 of the recipe (``configs/paper_recipe_smollm2_cpu.yaml``, seed 1) is built once into the
run folders (``--runs``, out of git; built again where it is missing), then continued at leakage level ``pair``
with each of three stage-2 losses: Pearson, cosine-MSE (sentence-transformers' ``CosineSimilarityLoss``) and
CoSENT. Every loss gets the same search: the recipe's stage 2 at three learning rates (the recipe's, half and
double) at one search seed that is never a test seed, checkpoints and the winner chosen on the dev sets filtered at
``pair``, no test set read. Each winner then runs over test seeds 1-3, scored on the seven full test sets under
the papers' protocol. The contrastive stage-2 rows of ``decoder_full`` (seeds 1-3, the recipe's settings, from its
own stage-1 build) stand beside them. Differences are paired by seed
(:func:`pcctune.evaluation.compare.seed_difference`, 95 % interval): a tie where the interval holds 0.

    python -m reproductions decoder_losses --rerun                 # every missing run, one at a time; resumable
    python -m reproductions decoder_losses --rerun -- --jobs 4     # up to four at once (a machine with a GPU)
    python -m reproductions decoder_losses --summarize             # table.md and decoder_losses.png from runs.json

Stage 1 selects no dev checkpoint: its model is its last step, the one the recipe's stage 2 continues
(``init: final``) and the one the stage-1 row scores. Each finished run leaves its record in ``records/`` (search
runs in ``records/search/``) and is never trained again; a run folder left by a killed run is resumed; ``runs.json``
is rewritten from the records after every run, so ``--summarize`` draws what is done. A stage 1 built again (on
another machine) is scored and kept as ``records/stage1_rebuilt.json``; the runner stops where its average is more
than 0.05 from the first build's (``reproductions/gpu``: the recipe lands within that on a GPU and on the CPU).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reproductions._common import ROOT, Measured, Rows, claim, kept, pair_counts, run_jobs, save_rows, train_once
from reproductions.decoder_full.decoder_full import stage2_record

from pcctune.data.tasks import SEVEN_TASKS, SHORT_NAMES
from pcctune.evaluation.tables import mean_std_cell
from pcctune.io import write_text
from pcctune.results import Difference, RunResult
from pcctune.training.config import RunConfig, load_config

HERE = Path(__file__).resolve().parent
DECODER_FULL = HERE.parent / "decoder_full" / "records"
TASKS = list(SEVEN_TASKS)
LOSSES = ("pearson", "cosine_mse", "cosent")
CONTRASTIVE = "contrastive"
LABELS = {
    "stage1": "stage 1 (InfoNCE, QLoRA)",
    "pearson": "stage 1 + Pearson (Pcc)",
    "cosine_mse": "stage 1 + cosine-MSE",
    "cosent": "stage 1 + CoSENT",
    CONTRASTIVE: "decoder_full's stage 1 + contrastive stage 2",
}
STAGE1_SEED, SEARCH_SEED, TEST_SEEDS = 1, 101, (1, 2, 3)
RATE_FACTORS = (1.0, 0.5, 2.0)
"""The search: the recipe's stage-2 learning rate, half and double it; the winner has the best dev score (the
recipe's on a tie)."""
REBUILD_TOLERANCE = 0.05
"""How far apart (seven-task average, Spearman × 100) two builds of one stage 1 may score and still count as one."""
SPEED = {"dropout_sampler": "gaps", "onednn": "on"}
"""The CPU speed settings of every run here, stage 1 and each loss alike: dropout masks drawn by their gaps (the same
distribution from another random stream, ``pcctune.modeling.gap_dropout``) and LoRA's float32 layers through oneDNN
as well as the 4-bit ones (the same products up to float rounding); with GradCache for every loss and the 4-bit
weights dequantized once (the library's defaults now), a recipe stage-2 step went from 23.61 s to 17.25 s (Pearson)
and from 22.70 s to 15.68 s (cosine-MSE) on the Zen 5 EPYC (``benchmarks/results/speed``, section 16). The recipe's
own settings are unchanged; stage 1 built under these is read against ``decoder_full``'s build before them
(:data:`BEFORE_SPEED`)."""
BEFORE_SPEED = ("seed1.json", "contrastive-nli")
"""``decoder_full``'s record and stage of the recipe's stage 1 built before :data:`SPEED` (the same recipe and seed):
the build this claim's stage 1 must land within :data:`REBUILD_TOLERANCE` of, or the table says by how much not."""
QUICK_STAGE = {"batch_size": 2, "max_steps": 1, "eval_steps": 1, "save_total_limit": 1}
"""--quick: one step of two examples per stage on a tiny random decoder, the dev set SICK trial's few pairs."""


def records(args: argparse.Namespace) -> Path:
    return Path(args.output) / "records"


def search_record(args: argparse.Namespace, loss: str, rate: float) -> Path:
    """Where the search run of ``loss`` at ``rate`` keeps its record."""
    return records(args) / "search" / f"{search_name(loss, rate)}.json"


def test_record(args: argparse.Namespace, loss: str, seed: int) -> Path:
    """Where the test run of ``loss``'s winner at ``seed`` keeps its record."""
    return records(args) / f"{loss}-seed{seed}.json"


def losses(args: argparse.Namespace) -> tuple[str, ...]:
    return LOSSES[:2] if args.quick else LOSSES


def search_factors(args: argparse.Namespace) -> tuple[float, ...]:
    return RATE_FACTORS[:2] if args.quick else RATE_FACTORS


def seeds_of(args: argparse.Namespace) -> tuple[int, ...]:
    return TEST_SEEDS[:2] if args.quick else TEST_SEEDS


def recipe(args: argparse.Namespace) -> RunConfig:
    return load_config(args.recipe)


def stage1_folder(args: argparse.Namespace) -> Path:
    return Path(args.runs) / "stage1"


def stage1_model(args: argparse.Namespace) -> Path:
    """The saved model every stage-2 run continues: stage 1's last step (it selects no dev checkpoint)."""
    return stage1_folder(args) / f"stage1-{recipe(args).stages[0].name}" / "final"


def stage1_built(args: argparse.Namespace) -> bool:
    """Whether this machine holds the finished stage 1 (its model and the run's results)."""
    return (stage1_model(args) / "modules.json").is_file() and (stage1_folder(args) / "results.json").is_file()


def _run_config(args: argparse.Namespace, raw: dict[str, Any], stage: dict[str, Any], **run: Any) -> RunConfig:
    """``raw`` (a dumped recipe) with one stage and ``run``'s fields; ``--quick`` shrinks the stage's budget."""
    if args.quick:
        stage = stage | QUICK_STAGE | ({"dev": "sick-trial"} if stage["dev"] != "none" else {})
    payload = raw | SPEED | {"evaluate_before": False, "data_dir": args.data, "stages": [stage]} | run
    return RunConfig.model_validate(payload | ({"model": args.model} if args.model and "model" not in run else {}))


def stage1_config(args: argparse.Namespace) -> RunConfig:
    """The recipe's stage 1 alone at seed 1, selecting no dev checkpoint (its final model is its last step)."""
    raw = recipe(args).model_dump(mode="json", exclude_unset=True)
    stage = raw["stages"][0] | {"dev": "none"}
    return _run_config(args, raw, stage, seed=STAGE1_SEED, output_dir=str(stage1_folder(args)))


def stage2_config(args: argparse.Namespace, loss: str, rate: float, seed: int, name: str) -> RunConfig:
    """The recipe's stage 2 with ``loss`` at ``rate``, continuing stage 1 (the saved model keeps its template),
    trained on the stage-2 set filtered at ``pair``, checkpoints chosen on the dev sets filtered alike."""
    raw = recipe(args).model_dump(mode="json", exclude_unset=True)
    stage = raw["stages"][1] | {"name": loss, "loss": loss, "learning_rate": rate}
    stage["data"] = stage["data"] | {"leakage": "pair"}
    run = {"model": str(stage1_model(args)), "template": None, "seed": seed, "output_dir": str(Path(args.runs) / name)}
    return _run_config(args, raw, stage, **run)


def rate_of(args: argparse.Namespace, factor: float) -> float:
    return recipe(args).stages[1].learning_rate * factor


def search_name(loss: str, rate: float) -> str:
    return f"{loss}-lr{rate:.1e}-seed{SEARCH_SEED}"


def best_dev(result: RunResult) -> float:
    value = result.stages[0].best_dev_spearman
    return float("-inf") if value is None else value


def winner(args: argparse.Namespace, loss: str) -> float | None:
    """The searched learning rate with the best dev score, once every search run of ``loss`` has a record."""
    rates = [rate_of(args, factor) for factor in search_factors(args)]
    results = [kept(search_record(args, loss, rate)) for rate in rates]
    if any(result is None for result in results):
        return None
    scores = [best_dev(result) for result in results if result is not None]
    return rates[scores.index(max(scores))]


def missing_runs(args: argparse.Namespace) -> Iterator[tuple[str, RunConfig, Path, bool]]:
    """(name, config, record, scored on the test sets) of each run the records call for and do not hold yet: every
    search run, then the test seeds one seed at a time, each seed's losses one after another (their differences are
    paired by seed, so a seed's runs follow each other on one machine), each loss once its search has run."""
    for loss in losses(args):
        for factor in search_factors(args):
            rate = rate_of(args, factor)
            record = search_record(args, loss, rate)
            if not record.is_file():
                yield record.stem, stage2_config(args, loss, rate, SEARCH_SEED, record.stem), record, False
    chosen = {loss: winner(args, loss) for loss in losses(args)}
    for seed in seeds_of(args):
        for loss, rate in chosen.items():
            record = test_record(args, loss, seed)
            if rate is not None and not record.is_file():
                yield record.stem, stage2_config(args, loss, rate, seed, record.stem), record, True


def ready_jobs(args: argparse.Namespace) -> Iterator[tuple[Any, ...]]:
    """(name, function, its arguments) of each job the records allow now: stage 1 while it has no record, or while
    runs remain and this machine lacks its model; else the missing stage-2 runs."""
    missing = list(missing_runs(args))
    if not (records(args) / "stage1.json").is_file() or (missing and not stage1_built(args)):
        yield "stage1", build_stage1, stage1_config(args), records(args)
        return
    for name, config, record, score in missing:
        yield name, train_once, config, record, score


def build_stage1(config: RunConfig, folder: Path) -> None:
    """Build (or resume) stage 1 and score it: the first build's record is ``stage1.json``; a later build's is
    ``stage1_rebuilt.json``, and one whose test average is not within :data:`REBUILD_TOLERANCE` of the first stops
    the runner. A rebuild that passes is another model that scores alike (stage-2 records name their machine); the
    check chooses nothing."""
    from pcctune.orchestration.pipeline import run_pipeline
    from pcctune.orchestration.run_folder import holds_a_run

    result = run_pipeline(config, resume=holds_a_run(Path(config.output_dir)))
    first = kept(folder / "stage1.json")
    if first is None:
        result.to_disk(folder / "stage1.json")
        return
    result.to_disk(folder / "stage1_rebuilt.json")
    recorded, rebuilt = stage1_avg(first), stage1_avg(result)
    if not alike(rebuilt, recorded):
        raise SystemExit(
            f"stage 1 built again here scores {rebuilt:.4f} against the first build's {recorded:.4f}: the stage-2 runs "
            f"would continue another model. Bring the first build's {config.output_dir} here, or start over."
        )


def alike(average: float, other: float) -> bool:
    """Whether two stage-1 averages lie within :data:`REBUILD_TOLERANCE` of each other."""
    return abs(average - other) <= REBUILD_TOLERANCE


def stage1_avg(result: RunResult) -> float:
    return float(next(iter(result.sts_by_stage.values()))["avg"])


def device_of(result: RunResult) -> str:
    """Where a record was computed (``versions.device``: ``cuda: GPU`` or ``cpu: …``), in short."""
    device = result.versions.get("device")
    if device is None:
        return "not recorded"
    kind, _, name = device.partition(": ")
    name = name.split("; flags:")[0]
    if name.endswith(")") and " (" in name:  # cpu: vendor family F model M (NAME); flags: …
        name = name[name.index(" (") + 2 : -1]
    return f"{kind.upper()}: {name}"


def run_row(label: str, kind: str, result: RunResult, stage: str, stage1: float) -> dict[str, Any]:
    """One record's row: its scores after ``stage``, the stage-1 average it continues, and what it cost."""
    record = next((s for s in result.stages if s.stage == stage), None)
    row = {"label": label, "kind": kind, "seed": result.seed, "stage1_avg": stage1, "device": device_of(result)}
    row |= {"best_dev": record and record.best_dev_spearman, "train_seconds": record and record.wall_time_s}
    row |= {"learning_rate": record and result.config["stages"][-1]["learning_rate"]}
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
    """Every search run: loss, learning rate, seed, best dev score, where it ran and its training time."""
    rows = []
    for loss in LOSSES:
        for factor in search_factors(args):
            rate = rate_of(args, factor)
            result = kept(search_record(args, loss, rate))
            if result is not None:
                rows.append(
                    {"loss": loss, "learning_rate": rate, "seed": result.seed, "best_dev": best_dev(result)}
                    | {"device": device_of(result), "train_seconds": result.stages[0].wall_time_s}
                )
    return rows


def progress(args: argparse.Namespace) -> list[list[Any]]:
    """[part, records, planned] of the claim's runs: stage 1, the search (every loss at every rate) and the test
    seeds (every loss's winner at every seed)."""
    rates = [rate_of(args, factor) for factor in search_factors(args)]
    search = [search_record(args, loss, rate) for loss in losses(args) for rate in rates]
    tests = [test_record(args, loss, seed) for loss in losses(args) for seed in seeds_of(args)]
    found = {"stage 1": [records(args) / "stage1.json"], "search runs": search, "test runs": tests}
    return [[part, sum(path.is_file() for path in paths), len(paths)] for part, paths in found.items()]


def details_of(args: argparse.Namespace) -> dict[str, Any]:
    rates = [rate_of(args, factor) for factor in search_factors(args)]
    found = {"search": search_rows(args), "rates": rates, "search_seed": SEARCH_SEED, "test_seeds": list(TEST_SEEDS)}
    return found | {"progress": progress(args)}


SETTINGS = (
    "SmolLM2-135M, the recipe's stage 1 (configs/paper_recipe_smollm2_cpu.yaml, seed 1, its last step), continued at "
    "leakage level pair by Pearson, cosine-MSE and CoSENT, each searched alike over three learning rates on the "
    f"pair-filtered dev sets (seed {SEARCH_SEED}), each winner over seeds 1-3; papers' protocol on the seven full "
    "test sets; the contrastive rows from reproductions/decoder_full/records"
)


def save_progress(args: argparse.Namespace) -> None:
    """``runs.json`` from the records as they are now (after every run: what a killed command has done is kept),
    and the front page's words on this claim (:func:`update_front_page`)."""
    save_rows(Path(args.output), BENCHMARK.name, collect(args), BENCHMARK.label_key, SETTINGS, details_of(args))
    update_front_page(args)


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
    if done < planned:
        return (
            f"{FRONT_PAGE_START} it has **not been run yet** (`reproductions/decoder_losses`: {done} of {planned} "
            "records; its runs are planned on the CPU, after the encoder's grown search)"
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


def measure(args: argparse.Namespace) -> Measured:
    if args.quick:
        args.runs = Path(args.output) / "runs"
    run_jobs(lambda: ready_jobs(args), args.jobs, args.max_runs, lambda: save_progress(args))
    update_front_page(args)
    return Measured(collect(args), SETTINGS, details_of(args))


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


def pearson_minus(pearson: Rows, other: Rows) -> Difference:
    from pcctune.evaluation.compare import seed_difference

    return seed_difference(seed_averages(other), seed_averages(pearson))


def _difference_cell(difference: Difference) -> str:
    ends = f" [{difference.low:+.2f}, {difference.high:+.2f}]" if difference.low is not None else ""
    return f"{difference.mean:+.2f}{ends}"


def _where(rows: Rows) -> str:
    return " / ".join(dict.fromkeys(row["device"] for row in rows))


def score_table(rows: Rows) -> list[str]:
    """Per row: seeds, learning rate, dev, the seven tasks and the average (mean ± std over seeds), the difference
    from the stage-1 model continued and Pearson's difference from the row (95 % intervals over paired seeds)."""
    header = ["row", "seeds", "lr", "dev", *[SHORT_NAMES[task] for task in TASKS], "avg", "− stage 1"]
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
        rates = " / ".join(dict.fromkeys(f"{row['learning_rate']:.1e}" for row in group))
        devs = [100 * row["best_dev"] for row in group if row["best_dev"] is not None]
        scores = " | ".join(mean_std_cell([row["sts"][task] for row in group]) for task in [*TASKS, "avg"])
        versus = (
            "—"
            if kind == "pearson" or not found["pearson"]
            else _difference_cell(pearson_minus(found["pearson"], group))
        )
        cells = [str(len(group)), rates, mean_std_cell(devs) if devs else "—", scores]
        cells += [_difference_cell(over_stage1(group)), versus, _where(group)]
        lines.append(f"| {LABELS[kind]} | " + " | ".join(cells) + " |")
    return lines


def search_table(details: dict[str, Any]) -> list[str]:
    """Best dev score (Spearman × 100) of each loss at each searched learning rate; the winner in bold."""
    rates = details["rates"]
    header = ["loss", *[f"lr {rate:.1e}" for rate in rates], "ran on"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for loss in LOSSES:
        runs = {row["learning_rate"]: row for row in details["search"] if row["loss"] == loss}
        best = max(runs.values(), key=lambda row: row["best_dev"]) if len(runs) == len(rates) else None
        cells = []
        for rate in rates:
            row = runs.get(rate)
            text = "not run yet" if row is None else f"{100 * row['best_dev']:.2f}"
            cells.append(f"**{text}**" if row is not None and row is best else text)
        lines.append(f"| {loss} | " + " | ".join(cells) + f" | {_where(list(runs.values())) or '—'} |")
    return lines


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


def verdict(rows: Rows) -> list[str]:
    """The verdict in words, from the records: held where Pearson's interval over paired seeds lies above both
    cosine-MSE and CoSENT, not held where either ties with it (the interval holds 0) or beats it; then every
    comparison, and each stage-2 row against the stage-1 model it continues."""
    found = groups(rows)
    pearson = found["pearson"]
    compared = {
        kind: pearson_minus(pearson, found[kind]) for kind in (*LOSSES[1:], CONTRASTIVE) if pearson and found[kind]
    }
    rivals = {loss: compared.get(loss) for loss in LOSSES[1:]}
    decided = {loss: d.verdict for loss, d in rivals.items() if d is not None and d.verdict is not None}
    if not pearson:
        lines = ["**not run yet**: Pearson's stage 2 has no record yet."]
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
    done = ["", "Progress (runs with a record):", "", "| part | records | planned |", "| --- | --- | --- |"]
    done += [f"| {part} | {count} | {planned} |" for part, count, planned in details.get("progress", [])]
    return "\n".join([*score_table(rows), *search, *search_table(details), *done, "", *verdict(rows)])


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


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own process (a GPU machine)")
    parser.add_argument("--max-runs", type=int, default=None, help="stop after this many runs (0: only runs.json)")
    parser.add_argument("--runs", type=Path, default=Path("runs/decoder_losses"), help="run folders (out of git)")
    parser.add_argument("--recipe", type=Path, default=Path("configs/paper_recipe_smollm2_cpu.yaml"))
    parser.add_argument("--model", default=None, help="replace the recipe's model (--quick: a tiny decoder)")


QUICK = {"model": "{llama}"}
"""--quick: stage 1, then Pearson and cosine-MSE each searched over two rates and run over two seeds, on a tiny
random decoder; then the table."""
BENCHMARK = claim(__name__, quick=QUICK, plot=plot)
