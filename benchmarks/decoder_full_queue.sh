#!/usr/bin/env bash
# Issue 25's table (docs/results/decoder_full): SmolLM2-135M through both stages in 4-bit, every row scored on
# the seven full test sets. Each step is skipped when its record exists and a killed training resumes, so
# rerunning the same line continues the queue (one process: training is the critical path). Each trained row's
# SimCSE-protocol and 4-bit evaluations follow its training at once, so a lost run folder costs one row at most.
# Usage: PCCTUNE_DATA=../shared/data benchmarks/decoder_full_queue.sh      Table: python benchmarks/decoder_full.py
# RUNS and RECORDS move the run folders and the records elsewhere (benchmarks/device_queue.sh does, on a GPU).
set -euo pipefail
recipe=configs/paper_recipe_smollm2_cpu.yaml
runs=${RUNS:-runs/decoder_full} records=${RECORDS:-docs/results/decoder_full/records}
adapter=docs/results/decoder_full/adapter   # seed 1's stage 1 + Pcc, committed (fp16)
mkdir -p "$records" "$runs"

score() {  # score NAME MODEL ARGS...: one pcctune eval, its record kept under docs/results
  local name=$1; shift
  [[ -f "$records/$name.json" ]] || pcctune eval "$@" --output "$records/$name.json"
}
fit() {  # fit FOLDER CONFIG ARGS...: pcctune train into FOLDER, resumed when it holds the run
  local folder=$1 config=$2 resume=(); shift 2
  [[ -f "$folder/run.json" ]] && resume=(--resume)
  pcctune train "$config" --set "output_dir=$folder" "${resume[@]}" "$@"
}
train() {  # train NAME CONFIG ARGS...: fit into runs/NAME, its record kept under docs/results
  local name=$1; shift
  [[ -f "$records/$name.json" ]] && return
  fit "$runs/$name" "$@"
  cp "$runs/$name/results.json" "$records/$name.json"
}
both_precisions() {  # the trained row's other evaluations: the SimCSE protocol, and the paper's on the 4-bit base
  [[ -d "$2" ]] || return 0   # a model lost with its run folder (its row keeps the run's own evaluation)
  score "$1_simcse" "$2" --protocol simcse-senteval
  score "$1_4bit" "$2" --protocol paper-prompt --quantization saved
}
stage_configs() {  # stage_configs FROM: the recipe's stage 1 alone, and its stage 2 starting from model FROM
  python - "$recipe" "$runs" "$1" <<'PY'
import sys
from pcctune.training.config import dump_config, load_config
recipe, runs, stage1_model = sys.argv[1:]
config = load_config(recipe)
dump_config(config.model_copy(update={"stages": config.stages[:1]}), f"{runs}/stage1_only.yaml")
stage2 = config.model_copy(update={"model": stage1_model, "template": None, "stages": config.stages[1:]})
dump_config(stage2, f"{runs}/stage2_from_seed1.yaml")
PY
}

score zero_shot_paper smollm2-135m --template eol --protocol paper-prompt
score zero_shot_simcse smollm2-135m --template eol --protocol simcse-senteval
train seed1 "$recipe" --set seed=1 --compare pearson,contrastive
# seeds 2 and 3: stage 2 only, from the same stage-1 model (its last step, as init: final). When seed 1's run
# folder is gone, its stage 1 is trained again as it first ran (seed 1, MKL's GEMM: onednn=false); the record of
# that run (stage1_rerun) shows it reproduces seed 1's stage-1 row. Each missing stage-2 row trains alone
# (seedN_LOSS); a row some record already scores is skipped, so a lost run folder costs only the rows it held.
stage1="$runs/seed1/stage1-contrastive-nli" start=last
[[ -d "$stage1/last" ]] || stage1="$runs/stage1_rerun/stage1-contrastive-nli" start=final
stage_configs "$stage1/$start"
stage1_model() {  # the stage-1 model that stage 2 continues, trained again when only its folder was lost
  [[ -d "$stage1/$start" ]] && return
  if [[ ! -f "$records/stage1_rerun.json" ]]; then
    train stage1_rerun "$runs/stage1_only.yaml" --set seed=1 --set onednn=false
  else  # its test row is recorded: train the model alone, and check it against the recorded dev score
    python - "$runs/stage1_only.yaml" "$runs/stage1_rerun" "$records/stage1_rerun.json" <<'PY'
import sys
from pathlib import Path
from pcctune.orchestration.pipeline import run_pipeline
from pcctune.results import load_result
from pcctune.training.config import load_config
config, folder, record = sys.argv[1:]
settings = {"output_dir": folder, "seed": 1, "onednn": False}
run = run_pipeline(load_config(config, settings), resume=(Path(folder) / "run.json").is_file(), tasks=[])
got, want = run.stages[0].best_dev_spearman, load_result(record).stages[0].best_dev_spearman
assert got == want, f"stage 1 trained again reached dev {got}, its record {want}: not the same model"
PY
  fi
  # alone, stage 1 keeps no separate last-step model: its final (dev-best) one must be its last checkpoint
  python - "$stage1/checkpoints" "$runs/stage1_rerun/results.json" <<'PY'
import json, sys
from pathlib import Path
last = max(int(p.name.rsplit("-", 1)[1]) for p in Path(sys.argv[1]).glob("checkpoint-*"))
best = json.loads(Path(sys.argv[2]).read_text())["stages"][0]["best_checkpoint"]
assert best.endswith(f"checkpoint-{last}"), f"stage 1's best checkpoint {best} is not its last step {last}"
PY
}
stage2_row() {  # stage2_row SEED LOSS: stage 2 with LOSS from the stage-1 model, then its other evaluations
  local seed=$1 loss=$2
  PYTHONPATH=benchmarks python -c "import sys; from pathlib import Path; from decoder_full import stage2_record
sys.exit(stage2_record(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]) is None)" "$records" "$seed" "$loss" && return
  stage1_model
  train "seed${seed}_$loss" "$runs/stage2_from_seed1.yaml" --set "seed=$seed" --compare "$loss"
  both_precisions "seed${seed}_$loss" "$runs/seed${seed}_$loss/stage1-pcc-$loss/final"
}
both_precisions stage1 "$stage1/final"
both_precisions seed1_pearson "$runs/seed1/stage2-pcc-pearson/final"
both_precisions seed1_contrastive "$runs/seed1/stage2-pcc-contrastive/final"
for seed in 2 3; do
  for loss in pearson contrastive; do stage2_row "$seed" "$loss"; done
done
# seed 1's Pcc row from its committed adapter, when its run folder is gone
score seed1_pearson_simcse smollm2-135m --template eol --adapter "$adapter" --protocol simcse-senteval
score seed1_pearson_4bit smollm2-135m --template eol --adapter "$adapter" --protocol paper-prompt --quantization nf4
# seed 3's contrastive row from its committed adapter (session 20), when its run folder is gone
contrastive=docs/results/decoder_full/adapter_contrastive_seed3
score seed3_contrastive_simcse smollm2-135m --template eol --adapter "$contrastive" --protocol simcse-senteval
score seed3_contrastive_4bit smollm2-135m --template eol --adapter "$contrastive" --protocol paper-prompt \
  --quantization nf4
# ICL: one demonstration chosen on the dev sets (PromptEOL §3.2), then scored like the zero-shot rows
[[ -d "$runs/icl_model" ]] || pcctune icl smollm2-135m --template eol --output "$runs/icl_model"
score icl_paper "$runs/icl_model" --protocol paper-prompt
score icl_simcse "$runs/icl_model" --protocol simcse-senteval
