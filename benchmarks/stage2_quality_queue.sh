#!/usr/bin/env bash
# Issue 17's loss comparison: one dev-selected sweep per stage-2 loss, the same space and trial budget
# for each, then the winner over 3 seeds on the 7 STS test sets. all-MiniLM-L6-v2 by default;
# MODEL=all-mpnet-base-v2 runs the same sweeps on MPNet (into runs/quality/all-mpnet-base-v2/); ROUND=2 runs
# round 2's space (configs/sweeps/stage2_round2_space.yaml, SICK rescaled, 8 trials) into runs/quality/round2/.
# Usage: [MODEL=...] [ROUND=2] benchmarks/stage2_quality_queue.sh LOSS [LOSS ...]   (one single-thread process per
# queue; rerun the same line to continue after an interrupt). Tables: python benchmarks/stage2_quality.py
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
out="runs/quality" fixed_args=() space="configs/sweeps/stage2_quality_space.yaml" trials="${TRIALS:-6}"
if [[ "${ROUND:-1}" == "2" ]]; then
  out="runs/quality/round2" space="configs/sweeps/stage2_round2_space.yaml" trials="${TRIALS:-8}"
  fixed_args=(--set stages.0.data.rescale_sick=true)
fi
if [[ -n "${MODEL:-}" && "$MODEL" != "all-MiniLM-L6-v2" ]]; then
  out="$out/$MODEL" fixed_args+=(--set "model=$MODEL")
fi
for loss in "$@"; do
  pcctune sweep configs/minilm_stage2_sweep_base.yaml --space "$space" \
    --trials "$trials" --seeds 3 --output "$out/$loss" "${fixed_args[@]}" \
    --set "stages.0.loss=$loss" --set stages.0.dev=sick-trial+stsb-dev \
    --set stages.0.eval_steps=40 --set stages.0.max_seq_length=128
done
