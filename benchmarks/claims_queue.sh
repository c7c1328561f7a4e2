#!/usr/bin/env bash
# Issue 26's tables (docs/results/{regression,batch_size,dcpcse,templates}), one benchmark after another on one
# core, cheapest first. Each benchmark resumes its own runs, so rerunning the same line continues the queue.
# Usage: OMP_NUM_THREADS=1 PCCTUNE_DATA=../shared/data benchmarks/claims_queue.sh
# all-mpnet-base-v2's DCPCSE rows ran on an H100 (benchmarks/device_queue.sh, job dcpcse-mpnet; session 17):
# docs/results/dcpcse/mpnet_h100. Here they would take about 20 single-core hours (estimated: 5.5 times
# MiniLM's step, models.md): python benchmarks/dcpcse.py --configs configs/dcpcse_mpnet.yaml (make install-mpnet).
set -euo pipefail
# regression (claim 4) is complete: its 24 rows are in docs/results/regression/runs.json; rerunning it
# without its run folders would train them again: python benchmarks/regression.py --output docs/results/regression
python benchmarks/batch_size.py --output docs/results/batch_size --resume
python benchmarks/dcpcse.py --configs configs/dcpcse_minilm.yaml --output docs/results/dcpcse
# deep prompts were still climbing on dev at step 46 (2 epochs): the two prompt variants again at Table 4's 10 epochs
python benchmarks/dcpcse.py --configs configs/dcpcse_minilm.yaml --variants "deep prompts" "shallow prompts" \
  --seeds 1 --max-steps 230 --runs runs/dcpcse_10_epochs --output docs/results/dcpcse/10_epochs
python benchmarks/templates.py --output docs/results/templates
