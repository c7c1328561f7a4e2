#!/bin/bash
# The recipe's stage 2 on SmolLM2-135M (profile_decoder_stage2.py, the decoder claim's settings, Pearson, 6 steps a
# process, no profiling; ONEDNN=auto where LoRA's float32 products stay on MKL): one process on both cores against
# two processes at once with one thread each (torch.set_num_threads, as the runner's --jobs sets it), alternating
# (one, two, then two, one); one JSON line per process into the log, then the throughput table (--parallel). Run
# on a quiet machine: nothing else on its cores.
#   bash benchmarks/results/speed/run_decoder_stage2_parallel.sh > benchmarks/results/speed/run_decoder_stage2_parallel_zen5.log
set -uo pipefail
cd "$(dirname "$0")/../../.."
HERE=benchmarks/results/speed
AFTER="--set dequantized_cache_mb=2048 --set dropout_sampler=gaps --set onednn=${ONEDNN:-on}"
LINES=$(mktemp)
one() {
  HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error python $HERE/profile_decoder_stage2.py --loss pearson --steps 6 \
    --profile-step 0 $AFTER --label "$1" "${@:2}" 2>/dev/null | tail -1 | tee -a "$LINES"
}
two() {
  (one "2 processes x 1 thread" --threads 1 &
   one "2 processes x 1 thread" --threads 1 &
   wait)
}
one "1 process x 2 threads"; two
two; one "1 process x 2 threads"
python $HERE/profile_decoder_stage2.py --parallel "$LINES"
