"""``pcctune data``: build the stage-2 set, audit training pairs against the test sets, download and count the
STS data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pcctune.cli.app import DataOption, console, data_app
from pcctune.errors import PcctuneError
from pcctune.orchestration.data import NEAR_THRESHOLD, PAPER_LEVEL, LeakageLevel

NearOption = Annotated[float, typer.Option(help="the near level's Jaccard similarity of character 3-grams")]


@data_app.command("stage2")
def data_stage2_command(
    data: DataOption = None,
    leakage: Annotated[
        LeakageLevel, typer.Option(help="what the filter removes: pair (the paper's), normalized, near or sentence")
    ] = PAPER_LEVEL,
    near_threshold: NearOption = NEAR_THRESHOLD,
    rescale_sick: Annotated[bool, typer.Option(help="map SICK 1–5 scores to 0–5 as 5·(x−1)/4")] = False,
    output: Annotated[Path, typer.Option(help="where to write the stage-2 pairs (jsonl)")] = Path(
        "runs/data/stage2.jsonl"
    ),
    report: Annotated[Path, typer.Option(help="where to write the leakage report (json)")] = Path(
        "runs/data/stage2_leakage.json"
    ),
) -> None:
    """Build the stage-2 set: STS-B train + SICK-R train minus every pair the leakage filter flags."""
    from pcctune.orchestration.stage2 import run_stage2

    run_stage2(data, leakage, rescale_sick, output, report, console, near_threshold)


@data_app.command("audit")
def data_audit_command(
    data: DataOption = None,
    pairs: Annotated[list[Path] | None, typer.Option(help="a pairs file to audit (csv/tsv/jsonl); repeatable")] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="audit the training data of each stage of this run config against the test sets the run filters "
            "against: the seven and its stages' leakage_against (its own tasks among them), or --against alone"
        ),
    ] = None,
    against: Annotated[
        list[Path] | None, typer.Option(help="your own test pairs files instead of the seven STS test sets; repeatable")
    ] = None,
    near_threshold: NearOption = NEAR_THRESHOLD,
    output: Annotated[Path, typer.Option(help="where to write the audit record (json)")] = Path("runs/data/audit.json"),
) -> None:
    """Check training pairs against the test sets at every leakage level: pair, normalized, near, sentence.

    Without --pairs or --config: STS-B train and SICK-R train (the stage-2 sources) and the dev sets used
    for checkpoint selection (SICK trial, STS-B dev)."""
    from pcctune.orchestration.audit import run_audit

    run_audit(data, pairs or [], config, against or [], near_threshold, output, console)


@data_app.command("download")
def data_download_command(
    dest: Annotated[
        Path, typer.Option(help="folder to create senteval/ in (then: --data DEST or PCCTUNE_DATA)")
    ] = Path("data"),
    local_datasets: Annotated[
        Path | None, typer.Option(help="read saved copies (save_to_disk) as DIR/HUB_ID instead of the Hub")
    ] = None,
    verify: Annotated[bool, typer.Option(help="check pair counts and content hashes against the release")] = True,
    overwrite: Annotated[bool, typer.Option(help="replace an existing DEST/senteval")] = False,
    nli: Annotated[
        bool, typer.Option(help="instead: SimCSE's NLI triplets (stage 1) as DEST/nli_for_simcse.csv")
    ] = False,
    sha256: Annotated[str | None, typer.Option(help="with --nli: refuse a file of another sha256")] = None,
) -> None:
    """Fetch the 7 STS test sets, STS-B train/dev and SICK (MTEB's Hub datasets, pinned) in the SentEval layout."""
    from pcctune.orchestration.data import run_download, run_nli_download

    if nli:
        run_nli_download(dest, local_datasets, sha256, console)
        return
    if sha256 is not None:
        raise PcctuneError("--sha256 checks the NLI triplets' file (--nli); the STS sets are checked by --verify")
    run_download(dest, local_datasets, verify, overwrite, console)


@data_app.command("tasks")
def data_tasks_command(
    data: DataOption = None,
    check_release: Annotated[
        bool, typer.Option("--check-release", help="fail unless every set is the SentEval release's (counts, hashes)")
    ] = False,
) -> None:
    """Count the pairs of each of the seven STS test tasks and their subsets."""
    from pcctune.orchestration.data import run_task_counts

    run_task_counts(data, check_release, console)
