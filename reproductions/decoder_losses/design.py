"""The decoder claim's design: the model, losses, search, seeds and speed settings fixed before the first run, each
run's config and where its record lives, and which runs the records call for (``decoder_losses.py`` runs them,
``tables.py`` reads them)."""

from __future__ import annotations

import argparse
import functools
import hashlib
from pathlib import Path
from typing import Any

from reproductions._common import kept
from reproductions.decoder_losses import search
from reproductions.decoder_losses.search import Point

from pcctune.cpu_kind import CPUKind
from pcctune.data.tasks import SEVEN_TASKS
from pcctune.host_settings import measured_kind
from pcctune.provenance import file_sha256
from pcctune.results import RunResult
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
RATE_FACTORS = (1.0, 0.5, 2.0, 4.0)
"""The search's learning rates: the recipe's stage-2 rate, half, double and four times it, at the recipe's steps (the
first points of ``search``, whose schedule then grows where it binds). Four times was added after the first three
points, where every loss's winner was double (the edge of the space); at four times every loss scores below its
double."""
REBUILD_TOLERANCE = 0.05
"""How far apart (seven-task average, Spearman × 100) two builds of one stage 1 may score and still count as one."""
SPEED = {"dropout_sampler": "gaps"}
"""The CPU speed settings of the runs here, stage 1 and each loss alike: dropout masks drawn by their gaps (the same
distribution from another random stream, ``pcctune.modeling.gap_dropout``), with GradCache for every loss and the
4-bit weights dequantized once (the library's defaults now); and LoRA's float32 layers through oneDNN where that
measured faster (:data:`ONEDNN_ON`, :func:`speed_settings`). On the Zen 5 EPYC a recipe stage-2 step went from
23.61 s to 17.25 s (Pearson) and from 22.70 s to 15.68 s (cosine-MSE) (``benchmarks/results/speed``, section 16).
The recipe's own settings are unchanged; stage 1 built under these is read against ``decoder_full``'s build before
them (:data:`BEFORE_SPEED`)."""
ONEDNN_ON = ("Zen 5 EPYC",)
"""The CPU kinds (``pcctune.host_settings.MEASURED_KINDS``) whose runs route LoRA's float32 layers through oneDNN as
well as the 4-bit ones (``onednn: on``, the same products up to float rounding): measured faster on the Zen 5 EPYC
(the products 9.0 s against 11.7 s of a step, section 16) and slower on the AVX2-only EPYC (47.89 s against 44.45 s
a step, section 17); on the Zen 4 EPYC 34.87 s against 35.41 s a step, within the spread between rounds (section
18), so it keeps ``auto`` there. Every other kind keeps the library's ``auto`` (oneDNN for the 4-bit layers
alone). Like the CPU's own kernels it changes float rounding only and goes with the machine a run is on (its
record's config and device say which)."""
BEFORE_SPEED = ("seed1.json", "contrastive-nli")
"""``decoder_full``'s record and stage of the recipe's stage 1 built before :data:`SPEED` (the same recipe and seed):
the build this claim's stage 1 must land within :data:`REBUILD_TOLERANCE` of, or the table says by how much not."""
QUICK_STAGE = {"batch_size": 2, "max_steps": 1, "eval_steps": 1, "save_total_limit": 1}
"""--quick: one step of two examples per stage on a tiny random decoder, the dev set SICK trial's few pairs."""


def records(args: argparse.Namespace) -> Path:
    return Path(args.output) / "records"


def search_record(args: argparse.Namespace, loss: str, point: Point) -> Path:
    """Where the search run of ``loss`` at ``point`` keeps its record."""
    return records(args) / "search" / f"{search_name(args, loss, point)}.json"


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
    """The recipe's config, read once while its file is unchanged (every run's name and config reads it)."""
    path = Path(args.recipe)
    return _recipe(str(path), str(Path.cwd()), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _recipe(path: str, cwd: str, modified_ns: int) -> RunConfig:
    """``load_config`` of ``path`` as read from ``cwd`` at its modification time ``modified_ns`` (the cache's key)."""
    return load_config(path)


def stage1_folder(args: argparse.Namespace) -> Path:
    return Path(args.runs) / "stage1"


def stage1_model(args: argparse.Namespace) -> Path:
    """The saved model every stage-2 run continues: stage 1's last step (it selects no dev checkpoint)."""
    return stage1_folder(args) / f"stage1-{recipe(args).stages[0].name}" / "final"


def stage1_built(args: argparse.Namespace) -> bool:
    """Whether this machine holds the finished stage 1 (its model and the run's results)."""
    return (stage1_model(args) / "modules.json").is_file() and (stage1_folder(args) / "results.json").is_file()


def check_stage1_build(args: argparse.Namespace) -> None:
    """Stop where the stage 1 built on this machine scores outside :data:`REBUILD_TOLERANCE` of the first build
    (``stage1.json``): every stage-2 run would continue another model. Read before any stage-2 run is handed out, so
    a runner started again after a failed rebuild stops again."""
    first = kept(records(args) / "stage1.json")
    if first is None or not stage1_built(args):
        return
    here = RunResult.from_disk(stage1_folder(args) / "results.json")
    if not alike(stage1_avg(here), stage1_avg(first)):
        raise SystemExit(
            f"stage 1 built here ({stage1_folder(args)}) scores {stage1_avg(here):.4f} against the first build's "
            f"{stage1_avg(first):.4f}: the stage-2 runs would continue another model. Bring the first build's "
            f"{stage1_folder(args)} here, or start over."
        )


BUILD_KEY = "stage1_model_sha256"
"""The key of a stage-2 record's ``versions`` that names the stage-1 build it continued (:func:`stage1_digest`)."""


def stage1_digest(args: argparse.Namespace) -> str:
    """Which build of stage 1 this machine holds: the digest of its saved model's weights (its LoRA adapter)."""
    return weights_digest(stage1_model(args))


def weights_digest(folder: Path) -> str:
    """The sha256 of a model folder's weight files (each ``*.safetensors`` by its path in the folder)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.safetensors")):
        digest.update(f"{path.relative_to(folder).as_posix()}:{file_sha256(path)};".encode())
    return digest.hexdigest()


def build_of(result: RunResult) -> str | None:
    """The stage-1 build a stage-2 record continued (``None`` for a record made before builds were kept)."""
    return result.versions.get(BUILD_KEY)


def compared_records(args: argparse.Namespace, record: Path) -> list[Path]:
    """The records a stage-2 run's record is read with: every search run (they choose each loss's point and the
    growth together), or the test runs of its seed (their differences are paired by seed)."""
    if record.parent.name == "search":
        return search_records(args)
    seed = record.stem.rsplit("-seed", 1)[1]
    return [test_record(args, loss, int(seed)) for loss in losses(args)]


def check_one_build(args: argparse.Namespace, record: Path, build: str) -> None:
    """Stop before a stage-2 run would continue another stage-1 build (``build``, this machine's) than a record it
    is read with (:func:`compared_records`): a rebuilt stage 1 that scores alike is still another model."""
    for other in compared_records(args, record):
        result = kept(other)
        theirs = build_of(result) if result is not None else None
        if theirs is not None and theirs != build:
            raise SystemExit(
                f"{record.stem} would continue stage-1 build {build[:12]}, but {other.name} continued {theirs[:12]}: "
                f"bring that build's {stage1_folder(args)} here, or move the records it is read with away to run them "
                "again on this build"
            )


def speed_settings(cpu: CPUKind | None = None) -> dict[str, str]:
    """:data:`SPEED` and the ``onednn`` measured faster on ``cpu``'s kind (this machine's by default)."""
    kind = measured_kind(cpu)
    return SPEED | {"onednn": "on" if kind is not None and kind.name in ONEDNN_ON else "auto"}


def _run_config(
    args: argparse.Namespace, raw: dict[str, Any], stage: dict[str, Any], steps: int | None = None, **run: Any
) -> RunConfig:
    """``raw`` (a dumped recipe) with one stage (of ``steps`` where given) and ``run``'s fields; ``--quick`` shrinks
    the stage's budget."""
    if args.quick:
        stage = stage | QUICK_STAGE | ({"dev": "sick-trial"} if stage["dev"] != "none" else {})
    if steps is not None:
        stage = stage | {"max_steps": steps}
    payload = raw | speed_settings() | {"evaluate_before": False, "data_dir": args.data, "stages": [stage]} | run
    return RunConfig.model_validate(payload | ({"model": args.model} if args.model and "model" not in run else {}))


def stage1_config(args: argparse.Namespace) -> RunConfig:
    """The recipe's stage 1 alone at seed 1, selecting no dev checkpoint (its final model is its last step)."""
    raw = recipe(args).model_dump(mode="json", exclude_unset=True)
    stage = raw["stages"][0] | {"dev": "none"}
    return _run_config(args, raw, stage, seed=STAGE1_SEED, output_dir=str(stage1_folder(args)))


def stage2_config(args: argparse.Namespace, loss: str, point: Point, seed: int, name: str) -> RunConfig:
    """The recipe's stage 2 with ``loss`` at ``point`` (its learning rate and steps; warm-up ratio and dev interval
    the recipe's), continuing stage 1 (the saved model keeps its template), trained on the stage-2 set filtered at
    ``pair``, checkpoints chosen on the dev sets filtered alike."""
    rate, steps = point
    raw = recipe(args).model_dump(mode="json", exclude_unset=True)
    stage = raw["stages"][1] | {"name": loss, "loss": loss, "learning_rate": rate}
    stage["data"] = stage["data"] | {"leakage": "pair"}
    run = {"model": str(stage1_model(args)), "template": None, "seed": seed, "output_dir": str(Path(args.runs) / name)}
    return _run_config(args, raw, stage, steps, **run)


def rate_of(args: argparse.Namespace, factor: float) -> float:
    return recipe(args).stages[1].learning_rate * factor


def first_steps(args: argparse.Namespace) -> int:
    """The first points' stage-2 steps: the recipe's (``--quick``: its one step)."""
    steps = QUICK_STAGE["max_steps"] if args.quick else recipe(args).stages[1].max_steps
    if steps is None or steps <= 0:  # -1: the stage counts epochs
        raise SystemExit(f"{args.recipe}'s stage 2 names no max_steps: the search grows a number of steps")
    return steps


def first_points(args: argparse.Namespace) -> list[Point]:
    """The search's first points: the recipe's stage 2 at each searched learning rate."""
    return [(rate_of(args, factor), first_steps(args)) for factor in search_factors(args)]


def search_name(args: argparse.Namespace, loss: str, point: Point) -> str:
    """A search run's name: its loss, rate and seed, and its steps where they are not the first points'."""
    rate, steps = point
    schedule = "" if steps == first_steps(args) else f"-steps{steps}"
    return f"{loss}-lr{rate:.1e}{schedule}-seed{SEARCH_SEED}"


def search_results(args: argparse.Namespace) -> search.ResultOf:
    """Each search run's record by loss and point (``None`` while it has none), each read once by the caller."""
    return functools.cache(lambda loss, point: kept(search_record(args, loss, point)))


def search_plan(args: argparse.Namespace, result_of: search.ResultOf | None = None) -> dict[str, list[Point]]:
    """Every loss's search points that the records call for so far (``search.plan``: the first points, then the
    schedule's growth), from ``result_of``'s records (this folder's by default)."""
    return search.plan(losses(args), first_points(args), result_of or search_results(args))


def search_records(args: argparse.Namespace) -> list[Path]:
    """The records of every search run the records call for so far, loss by loss."""
    return [search_record(args, loss, point) for loss, points in search_plan(args).items() for point in points]


def winner(args: argparse.Namespace, loss: str) -> Point | None:
    """The search point of ``loss`` with the best dev score, once the whole search has its records (no further
    growth called for)."""
    result_of = search_results(args)
    plan = search_plan(args, result_of)
    if any(result_of(name, point) is None for name, points in plan.items() for point in points):
        return None
    return search.leader(loss, plan[loss], result_of)


def alike(average: float, other: float) -> bool:
    """Whether two stage-1 averages lie within :data:`REBUILD_TOLERANCE` of each other."""
    return abs(average - other) <= REBUILD_TOLERANCE


def stage1_avg(result: RunResult) -> float:
    return float(next(iter(result.sts_by_stage.values()))["avg"])


def progress(args: argparse.Namespace) -> list[list[Any]]:
    """[part, records, planned] of the claim's runs: stage 1, the search (every loss's points the records call for so
    far) and the test seeds (every loss's winner at every seed)."""
    search = search_records(args)
    tests = [test_record(args, loss, seed) for loss in losses(args) for seed in seeds_of(args)]
    found = {"stage 1": [records(args) / "stage1.json"], "search runs": search, "test runs": tests}
    return [[part, sum(path.is_file() for path in paths), len(paths)] for part, paths in found.items()]
