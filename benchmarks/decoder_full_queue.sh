#!/usr/bin/env bash
# Issue 25's table (docs/results/decoder_full): SmolLM2-135M through both stages in 4-bit, every row scored on
# the seven full test sets. Each step is skipped when its record exists and a killed training resumes, so
# rerunning the same line continues the queue (one process: training is the critical path). Order: the rows each
# run scores itself (paper protocol, 16-bit base) for every seed first, then ICL, then the SimCSE-protocol and
# 4-bit evaluations of each trained row.
# Usage: PCCTUNE_DATA=../shared/data benchmarks/decoder_full_queue.sh      Table: python benchmarks/decoder_full.py
set -euo pipefail
recipe=configs/paper_recipe_smollm2_cpu.yaml runs=runs/decoder_full records=docs/results/decoder_full/records
mkdir -p "$records"

score() {  # score NAME MODEL ARGS...: one pcctune eval, its record kept under docs/results
  local name=$1; shift
  [[ -f "$records/$name.json" ]] || pcctune eval "$@" --output "$records/$name.json"
}
train() {  # train NAME CONFIG ARGS...: pcctune train, resumed when its folder holds the run
  local name=$1 config=$2; shift 2
  local folder="$runs/$name" resume=()
  [[ -f "$records/$name.json" ]] && return
  [[ -f "$folder/run.json" ]] && resume=(--resume)
  pcctune train "$config" --set "output_dir=$folder" "${resume[@]}" "$@"
  cp "$folder/results.json" "$records/$name.json"
}
both_precisions() {  # the trained row's other evaluations: the SimCSE protocol, and the paper's on the 4-bit base
  score "$1_simcse" "$2" --protocol simcse-senteval
  score "$1_4bit" "$2" --protocol paper-prompt --quantization saved
}

score zero_shot_paper smollm2-135m --template eol --protocol paper-prompt
score zero_shot_simcse smollm2-135m --template eol --protocol simcse-senteval
train seed1 "$recipe" --set seed=1 --compare pearson,contrastive
# seeds 2 and 3: stage 2 only, from the same stage-1 model (its last step, as init: final)
python - "$recipe" "$runs/stage2_from_seed1.yaml" "$runs/seed1/stage1-contrastive-nli/last" <<'PY'
import sys
from pcctune.training.config import dump_config, load_config
config = load_config(sys.argv[1])
stage2 = config.model_copy(update={"model": sys.argv[3], "template": None, "stages": config.stages[1:]})
dump_config(stage2, sys.argv[2])
PY
for seed in 2 3; do
  train "seed$seed" "$runs/stage2_from_seed1.yaml" --set "seed=$seed" --compare pearson,contrastive
done
# ICL: one demonstration chosen on the dev sets (PromptEOL §3.2), then scored like the zero-shot rows
[[ -d "$runs/icl_model" ]] || pcctune icl smollm2-135m --template eol --output "$runs/icl_model"
score icl_paper "$runs/icl_model" --protocol paper-prompt
score icl_simcse "$runs/icl_model" --protocol simcse-senteval
# last, each trained row's other evaluations (the table's main columns come from the runs themselves)
both_precisions stage1 "$runs/seed1/stage1-contrastive-nli/final"
for loss in pearson contrastive; do both_precisions "seed1_$loss" "$runs/seed1/stage2-pcc-$loss/final"; done
for seed in 2 3; do
  for loss in pearson contrastive; do both_precisions "seed${seed}_$loss" "$runs/seed$seed/stage1-pcc-$loss/final"; done
done
