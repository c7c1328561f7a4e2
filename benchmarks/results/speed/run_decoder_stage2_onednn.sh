#!/bin/bash
# The recipe's stage 2 on SmolLM2-135M, Pearson, 5 steps a process, under the decoder claim's settings with LoRA's
# float32 layers through oneDNN (onednn=on, labelled "AFTER") and left to MKL (onednn=auto), alternating (on, auto,
# then auto, on): run_decoder_stage2_before_after.sh with those two settings. Run on a quiet machine.
#   bash benchmarks/results/speed/run_decoder_stage2_onednn.sh > benchmarks/results/speed/run_decoder_stage2_onednn_avx2.log
SETTINGS="--set dequantized_cache_mb=2048 --set dropout_sampler=gaps"
LOSSES=pearson BEFORE="$SETTINGS --set onednn=on" BEFORE_LABEL="AFTER" AFTER="$SETTINGS --set onednn=auto" \
  AFTER_LABEL="AFTER, onednn=auto" exec bash "$(dirname "$0")/run_decoder_stage2_before_after.sh"
