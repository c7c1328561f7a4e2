#!/bin/bash
# the demo's pcctune train (as speed.py --only train runs it), alternating: this checkout ("new": the workers' heaps
# released after each encoding) and c3f417c ("old": not released); usage: bash THIS "1" "new old", then "2 3" "old new"
cd /work/main && source .venv/bin/activate
export PCCTUNE_DATA=/work/shared/data HF_HUB_OFFLINE=1
rm -rf /tmp/base_c3f && mkdir -p /tmp/base_c3f && git archive c3f417c src | tar -x -C /tmp/base_c3f
lscpu | grep -E "Model name"
for i in $1; do
  for v in $2; do
    rm -rf /root/.cache/pcctune/scores /tmp/ab_${v}_$i
    if [ $v = old ]; then export PYTHONPATH=/tmp/base_c3f/src; else unset PYTHONPATH; fi
    /usr/bin/time -f "$v repeat $i: %e s wall, %U s user, %S s sys, %M KB peak" python -m pcctune.cli train configs/demo_minilm.yaml --set model=all-MiniLM-L6-v2 --set stages.0.batch_size=64 --output-dir /tmp/ab_${v}_$i > /tmp/ab_${v}_$i.out 2>&1
    tail -1 /tmp/ab_${v}_$i.out
  done
done
