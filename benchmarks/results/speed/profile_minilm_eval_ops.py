"""Where the encoding time of ``pcctune eval all-MiniLM-L6-v2 --tasks sts`` goes, operator by operator.

The distinct sentences of the seven STS test sets, batched as ``pcctune.modeling.encoding`` batches them (token
lengths, the encoder's token budget), every 4th batch run on one thread under torch's profiler; the GEMM rate is
the linear layers' floating-point operations (2 · padded tokens · inputs · outputs each) over ``aten::addmm``'s
own time. Usage: ``python THIS [EVERY_NTH_BATCH]`` with ``PCCTUNE_DATA`` pointing at the SentEval data.
"""

import os
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from pcctune.data.tasks import load_test_tasks
from pcctune.modeling.build import build_model
from pcctune.modeling.cpu_workers import tokenized
from pcctune.modeling.encoding import ENCODER_TOKEN_BUDGET, length_batches, token_lengths

torch.set_num_threads(1)
every = int(sys.argv[1]) if len(sys.argv) > 1 else 4
tasks = load_test_tasks(Path(os.environ["PCCTUNE_DATA"]) / "senteval")
texts = sorted({s for task in tasks for pair in task.pairs for s in (pair.sentence1, pair.sentence2)})
model = build_model("all-MiniLM-L6-v2").eval()
started = time.perf_counter()
lengths = token_lengths(model, texts)
batches = length_batches(lengths, ENCODER_TOKEN_BUDGET)
features = [tokenized(model, [texts[i] for i in batch]) for batch in batches]
tokenizing = time.perf_counter() - started
padded = sum(len(b) * lengths[b[0]] for b in batches)
print(
    f"{len(texts)} distinct sentences, {len(batches)} batches, {sum(lengths)} tokens ({padded} padded); both "
    f"tokenizations {tokenizing:.2f} s"
)
sample = features[::every]
encoder = model[0].auto_model.encoder
per_token = sum(m.in_features * m.out_features for m in encoder.modules() if isinstance(m, nn.Linear))
flops = 2 * per_token * sum(f["input_ids"].numel() for f in sample)
with torch.inference_mode():
    model(features[0])  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as profiled:
        started = time.perf_counter()
        for batch in sample:
            model(batch)
        seconds = time.perf_counter() - started
events = profiled.key_averages()
gemm = next(e for e in events if e.key == "aten::addmm").self_cpu_time_total / 1e6
print(
    f"{len(sample)} of {len(batches)} batches on one thread: {seconds:.2f} s under the profiler; aten::addmm's own "
    f"time {gemm:.2f} s for {flops / 1e12:.3f} TFLOP of the encoder's linear layers: "
    f"{flops / gemm / 1e9:.0f} GFLOP/s"
)
print(events.table(sort_by="self_cpu_time_total", row_limit=10))
