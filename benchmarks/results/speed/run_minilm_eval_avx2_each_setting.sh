#!/bin/bash
# pcctune eval all-MiniLM-L6-v2 --tasks sts with each CPU speed setting alone, all three, and none, alternating
cd /work/main && source .venv/bin/activate
export PCCTUNE_DATA=/work/shared/data HF_HUB_OFFLINE=1
lscpu | grep -E "Model name|^CPU\(s\)"; lscpu | grep Flags | grep -o "avx512[a-z_0-9]*\|avx2\|fma\|amx[a-z_]*" | sort -u | tr '\n' ' '; echo
for i in 1 2; do
  for mode in all 0 workers onednn keep_freed_memory; do
    if [ $mode = all ]; then unset PCCTUNE_CPU_SPEEDUPS; else export PCCTUNE_CPU_SPEEDUPS=$mode; fi
    /usr/bin/time -f "$mode repeat $i: %e s wall, %U s user, %S s sys, %M KB peak" pcctune eval all-MiniLM-L6-v2 --tasks sts --output /tmp/eval_${mode}_$i.json > /tmp/eval_${mode}_$i.out 2>&1
    tail -1 /tmp/eval_${mode}_$i.out
    grep -a "avg\|│ all" /tmp/eval_${mode}_$i.out | tail -1
  done
done
