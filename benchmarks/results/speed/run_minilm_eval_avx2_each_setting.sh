#!/bin/bash
# pcctune eval all-MiniLM-L6-v2 --tasks sts under each PCCTUNE_CPU_SPEEDUPS setting named, alternating; "all": all
# three (when it ran, the variable was left unset, which was then the command's default of all three).
# usage: bash THIS [REPEATS] [SETTINGS]; as run: bash THIS, then bash THIS "3 4" "0 workers all" (the _more.log)
cd /work/main && source .venv/bin/activate
export PCCTUNE_DATA=/work/shared/data HF_HUB_OFFLINE=1
lscpu | grep -E "Model name|^CPU\(s\)"; lscpu | grep Flags | grep -o "avx512[a-z_0-9]*\|avx2\|fma\|amx[a-z_]*" | sort -u | tr '\n' ' '; echo
for i in ${1:-1 2}; do
  for mode in ${2:-all 0 workers onednn keep_freed_memory}; do
    export PCCTUNE_CPU_SPEEDUPS=${mode/all/1}
    /usr/bin/time -f "$mode repeat $i: %e s wall, %U s user, %S s sys, %M KB peak" pcctune eval all-MiniLM-L6-v2 --tasks sts --output /tmp/eval_${mode}_$i.json > /tmp/eval_${mode}_$i.out 2>&1
    tail -1 /tmp/eval_${mode}_$i.out
    grep -a "avg\|│ all" /tmp/eval_${mode}_$i.out | tail -1
  done
done
