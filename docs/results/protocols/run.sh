#!/usr/bin/env bash
# The MiniLM base and SmolLM2-135M zero-shot (EOL template) under both STS protocols, full test sets.
# Two chains of single-thread processes (2 cores here); each JSON records its wall time.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/results/protocols
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
(
  .venv/bin/pcctune eval all-MiniLM-L6-v2 --protocol simcse-senteval --output $out/minilm_simcse-senteval.json
  .venv/bin/pcctune eval smollm2-135m --template eol --protocol simcse-senteval --output $out/smollm2_eol_simcse-senteval.json
) > $out/chain_a.log 2>&1 &
(
  .venv/bin/pcctune eval all-MiniLM-L6-v2 --protocol paper --output $out/minilm_paper.json
  .venv/bin/pcctune eval smollm2-135m --template eol --protocol paper --output $out/smollm2_eol_paper.json
) > $out/chain_b.log 2>&1 &
wait
