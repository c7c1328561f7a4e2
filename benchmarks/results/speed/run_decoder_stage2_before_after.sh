#!/bin/bash
# The recipe's stage 2 on SmolLM2-135M (profile_decoder_stage2.py), 5 steps a process, before the speed changes and
# after them, alternating (before, after, then after, before), for Pearson and for cosine-MSE; one JSON line per
# process into the log, then the table (--summarize). Run on a quiet machine: nothing else on its cores.
#   bash benchmarks/results/speed/run_decoder_stage2_before_after.sh > benchmarks/results/speed/run_decoder_stage2_zen5.log
# The environment may set the two settings compared (BEFORE, AFTER), their labels (BEFORE_LABEL, AFTER_LABEL) and
# the losses (LOSSES): run_decoder_stage2_onednn.sh does.
set -u
cd "$(dirname "$0")/../../.."
HERE=benchmarks/results/speed
BEFORE=${BEFORE:-"--set dequantized_cache_mb=0 --set dropout_sampler=torch --set onednn=auto"}
AFTER=${AFTER:-"--set dequantized_cache_mb=2048 --set dropout_sampler=gaps --set onednn=on"}
LINES=$(mktemp)
for loss in ${LOSSES:-pearson cosine_mse}; do
  for which in BEFORE AFTER AFTER BEFORE; do
    label="${which}_LABEL"
    HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error python $HERE/profile_decoder_stage2.py --loss $loss --steps 5 \
      --profile-step 3 ${!which} --label "${!label:-$which}" 2>/dev/null | tail -1 | tee -a "$LINES"
  done
done
python $HERE/profile_decoder_stage2.py --summarize "$LINES"
