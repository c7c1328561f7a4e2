#!/bin/bash
# The demo's pcctune train (configs/demo_minilm.yaml) with the stage under bf16 autocast (stages.0.bf16=true) against
# fp32, alternating, whole processes, no "before" scores (training and the test evaluation after it).
# usage: bash THIS "1 2" "fp32 bf16"; FROZEN_SRC=DIR runs the pcctune sources in DIR (a git archive of the commit
# measured) instead of the checkout, which may change while it runs
cd /work/main && source .venv/bin/activate
export PCCTUNE_DATA=/work/shared/data HF_HUB_OFFLINE=1 PYTHONPATH=${FROZEN_SRC:-}
lscpu | grep -E "Model name"; grep -m3 -E "vendor_id|cpu family|^model\s" /proc/cpuinfo | tr '\n' ' '; echo
lscpu | grep Flags | grep -o "avx512[a-z_0-9]*\|amx[a-z_0-9]*" | sort -u | tr '\n' ' '; echo
for i in $1; do
  for v in $2; do
    rm -rf /tmp/bf16_${v}_$i
    flag=$([ $v = bf16 ] && echo true || echo false)
    /usr/bin/time -f "$v repeat $i: %e s wall, %U s user, %S s sys, %M KB peak" pcctune train configs/demo_minilm.yaml --set stages.0.bf16=$flag --set evaluate_before=false --output-dir /tmp/bf16_${v}_$i > /tmp/bf16_${v}_$i.out 2>&1
    tail -1 /tmp/bf16_${v}_$i.out
    python -c "import json; r=json.load(open('/tmp/bf16_${v}_$i/results.json')); s=r['stages'][-1]; print('best dev', s['best_dev_spearman'], 'train s', s['wall_time_s'], 'cpu s', s['cpu_time_s'], 'peak MB', s['peak_memory_mb'], 'after', r['sts_by_stage'][s['stage']])"
  done
done
