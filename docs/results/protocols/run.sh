#!/usr/bin/env bash
# The MiniLM base and SmolLM2-135M zero-shot (EOL template) under both STS protocols, full test sets.
# Two chains of single-thread processes (2 cores here); each JSON records its wall time.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/results/protocols
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for protocol in simcse-senteval paper; do
  (
    .venv/bin/pcctune eval all-MiniLM-L6-v2 --protocol $protocol --output $out/minilm_$protocol.json
    .venv/bin/pcctune eval smollm2-135m --template eol --protocol $protocol --output $out/smollm2_eol_$protocol.json
  ) > $out/$protocol.log 2>&1 &
done
wait
