#!/bin/bash
# The recipe's stage 2 on SmolLM2-135M (profile_decoder_stage2.py), Pearson, 5 steps a process, under the decoder
# claim's settings with LoRA's float32 layers through oneDNN (onednn=on, "AFTER") and left to MKL (onednn=auto),
# alternating (on, auto, then auto, on); one JSON line per process into the log, then the table (--summarize). Run on
# a quiet machine: nothing else on its cores.
#   bash benchmarks/results/speed/run_decoder_stage2_onednn.sh > benchmarks/results/speed/run_decoder_stage2_onednn_avx2.log
set -u
cd "$(dirname "$0")/../../.."
HERE=benchmarks/results/speed
ON="--set dequantized_cache_mb=2048 --set dropout_sampler=gaps --set onednn=on"
AUTO="--set dequantized_cache_mb=2048 --set dropout_sampler=gaps --set onednn=auto"
LINES=$(mktemp)
for which in ON AUTO AUTO ON; do
  label=$([ $which = ON ] && echo "AFTER" || echo "AFTER, onednn=auto")
  HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error python $HERE/profile_decoder_stage2.py --loss pearson --steps 5 \
    --profile-step 3 ${!which} --label "$label" 2>/dev/null | tail -1 | tee -a "$LINES"
done
python $HERE/profile_decoder_stage2.py --summarize "$LINES"
