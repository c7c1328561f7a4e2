#!/bin/bash
# What bounds `pcctune eval all-MiniLM-L6-v2 --tasks sts` on a CPU: the import of sentence-transformers (twice),
# the operators of the encoding (profile_minilm_eval_ops.py), then fp32 against --dtype bf16, whole processes,
# alternating (fp32, bf16, bf16, fp32). usage: bash THIS (from the repository root, nothing else running)
source .venv/bin/activate
export PCCTUNE_DATA=/work/shared/data HF_HUB_OFFLINE=1
lscpu | grep -E "Model name|^CPU\(s\)"; grep -m3 -E "vendor_id|cpu family|^model\s" /proc/cpuinfo | tr -s '\t' ' '
lscpu | grep Flags | grep -o "avx512[a-z_0-9]*\|avx2\|fma\|amx[a-z_]*" | sort -u | tr '\n' ' '; echo
for i in 1 2; do
  python -c "import time; t = time.perf_counter(); import sentence_transformers; print(f'import sentence_transformers: {time.perf_counter() - t:.2f} s')" 2>&1 | grep import
done
python benchmarks/results/speed/profile_minilm_eval_ops.py 4 2>&1 | grep -v "Warning\|kernels\|USDT\|Loading weights"
run=$(date +%s)
for dtype in fp32 bf16 bf16 fp32; do
  out=/tmp/bound_${run}_${dtype}_$((++n))
  /usr/bin/time -f "$dtype: %e s wall, %U s user, %S s sys, %M KB peak" pcctune eval all-MiniLM-L6-v2 --tasks sts --dtype $dtype --output $out.json > $out.out 2>&1
  tail -1 $out.out; python -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d.get(\"sts\") or d)[:400])" $out.json
done
