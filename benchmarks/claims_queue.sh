#!/usr/bin/env bash
# Issue 26's tables (docs/results/{regression,batch_size,dcpcse,templates}), one benchmark after another on one
# core, cheapest first. Each benchmark resumes its own runs, so rerunning the same line continues the queue.
# Usage: OMP_NUM_THREADS=1 PCCTUNE_DATA=../shared/data benchmarks/claims_queue.sh
# all-mpnet-base-v2's DCPCSE rows ran on an H100 (benchmarks/device_queue.sh, job dcpcse-mpnet; session 17):
# docs/results/dcpcse/mpnet_h100. Here they would take about 20 single-core hours (estimated: 5.5 times
# MiniLM's step, models.md): python benchmarks/dcpcse.py --configs configs/dcpcse_mpnet.yaml (make install-mpnet).
set -euo pipefail
# Complete, each with its rows in its runs.json; they ran before a benchmark kept each run's record
# (OUTPUT/records), so rerunning one without its run folders would train every run again:
#   regression (claim 4, 24 runs): python benchmarks/regression.py --output docs/results/regression
#   DCPCSE on MiniLM (claim 3, 12 runs): python benchmarks/dcpcse.py --configs configs/dcpcse_minilm.yaml \
#     --output docs/results/dcpcse
#   deep vs shallow prompts at Table 4's 10 epochs (2 runs): python benchmarks/dcpcse.py \
#     --configs configs/dcpcse_minilm.yaml --variants "deep prompts" "shallow prompts" --seeds 1 --max-steps 230 \
#     --runs runs/dcpcse_10_epochs --output docs/results/dcpcse/10_epochs
python benchmarks/batch_size.py --output docs/results/batch_size --resume
# templates (claim 2): each finished run's record lands in docs/results/templates/records and is not trained again
python benchmarks/templates.py --output docs/results/templates
