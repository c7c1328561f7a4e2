"""Does the Pearson loss beat sentence-transformers' losses when nothing leaks?

all-MiniLM-L6-v2 (already trained contrastively: a stage-I model) gets Pcc-tuning's stage 2 on STS-B train + SICK-R
train filtered at a leakage level (``pair``: the paper's filter; ``sentence``: no test sentence left;
docs/leakage.md), with each of five losses: Pearson (Pcc-tuning eq. 8), cosine-MSE (sentence-transformers'
``CosineSimilarityLoss``), CoSENT, AnglE and the contrastive stage 2 (Pcc-tuning §4.3: pairs scored 4 or more as
positives of InfoNCE). Every loss gets the same dev-only search; its winner runs over test seeds, each scored on the
seven full test sets (SimCSE protocol) and compared with :func:`pcctune.evaluation.compare.seed_difference` (95 %
interval over paired seeds).

    python -m reproductions leakage --rerun        # the wide search's missing runs (leakage.wide)
    python -m reproductions leakage --rerun -- --grid narrow   # the four-setting search's (leakage.narrow)
    python -m reproductions leakage --summarize    # table.md, verdict.md and leakage.png from the records

The claim's modules, each importing only those before it: :mod:`~reproductions.leakage.cells` (what a run is),
:mod:`~reproductions.leakage.design` (the wide search's eight settings), :mod:`~reproductions.leakage.narrow` and
:mod:`~reproductions.leakage.wide` (each search's plan and runner), :mod:`~reproductions.leakage.report` (the
records read out), and this one (the claim's entry point).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reproductions._common import ROOT, Measured, claim
from reproductions.leakage import narrow, wide
from reproductions.leakage.cells import BASE_RECORDS, LOSSES, PAIR, SENTENCE
from reproductions.leakage.report import summary_details, write_summary
from reproductions.leakage.report import table as table  # the claim's table (Benchmark.of reads it here)

from pcctune.data.leakage import LeakageLevel


def measure(args: argparse.Namespace) -> Measured:
    if args.model:
        args.runs = Path(args.output) / "runs"
    after = None if args.model else lambda: write_summary(args)
    if args.grid == "narrow" or args.model:  # --quick (a model given) runs both grids' paths
        narrow.train_missing(args, after)
    if args.grid == "wide" or args.model:
        wide.train_missing(args, after)
    if not args.model:
        write_summary(args)
    rows = narrow.collect(args)
    settings = (
        "all-MiniLM-L6-v2's stage 2 on the stage-2 set filtered at each level (SICK-R rescaled to 0-5), five losses "
        "each searched alike on dev (the narrow search: four settings; the wide search: eight Sobol points, two search "
        "seeds at sentence and for its control, one at the pair-sized levels), winners over test seeds; SimCSE "
        "protocol on the seven full test sets; "
        "the models before training from " + " and ".join(str(path.relative_to(ROOT)) for path in BASE_RECORDS.values())
    )
    return Measured(rows, settings, summary_details(args))


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-runs", type=int, default=None, help="stop after training this many runs")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own process (a GPU machine)")
    parser.add_argument("--runs", type=Path, default=Path("runs/leakage"), help="folder of the run folders")
    parser.add_argument("--model", default=None, help="replace every run's model (--quick: a tiny one)")
    parser.add_argument("--grid", choices=["wide", "narrow"], default="wide", help="which search's runs to train")
    parser.add_argument("--cells", nargs="*", default=None, help="wide: the blocks to run, in order (default all)")
    parser.add_argument("--levels", nargs="*", type=LeakageLevel, default=[SENTENCE, PAIR], help="narrow: levels")
    parser.add_argument("--losses", nargs="*", default=list(LOSSES), help="the losses, Pearson first")


QUICK = {"model": "{bert}", "levels": [PAIR], "cells": ["pair"], "losses": ["pearson", "cosine_mse"]}
"""--quick: both grids' whole paths on a tiny random model, two losses at ``pair``: the narrow grid's trials and one
test seed, the wide search's one point, one search seed and one test seed."""
BENCHMARK = claim(__name__, quick=QUICK, plot=None)
