"""Why bf16 autocast training is slower on a CPU with AVX512_BF16 and no AMX: one Pearson step of all-MiniLM-L6-v2
(batch 64 pairs of STS-B train sentences, max length 128) in fp32 and under bf16 autocast, 2 warm-up and 3 profiled
steps each; torch.profiler's top operators by self CPU time. Run: python THIS (the log beside it: its output)."""

import os
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from pcctune.cpu_kind import this_cpu
from pcctune.data.sts import read_stsb_csv
from pcctune.losses.pearson import PearsonLoss
from pcctune.modeling.build import build_model

DATA = Path(os.environ.get("PCCTUNE_DATA", "../shared/data"))
STSB_TRAIN = DATA / "senteval/downstream/STS/STSBenchmark/sts-train.csv"
print(this_cpu().identity)
pairs = read_stsb_csv(STSB_TRAIN)[:64]
model = build_model("all-MiniLM-L6-v2")
model.max_seq_length = 128
loss = PearsonLoss(model)
features = [model.tokenize([p.sentence1 for p in pairs]), model.tokenize([p.sentence2 for p in pairs])]
labels = torch.tensor([p.score for p in pairs])


def step(bf16: bool) -> None:
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        value = loss(features, labels)
    value.backward()
    model.zero_grad()


for bf16 in (False, True):
    for _ in range(2):
        step(bf16)
    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            step(bf16)
    print(f"\n{'bf16 autocast' if bf16 else 'fp32'}: {(time.perf_counter() - started) / 3:.3f} s a step (profiled)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=48))
