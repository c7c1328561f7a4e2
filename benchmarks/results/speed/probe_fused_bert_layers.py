"""Would fusing all-MiniLM-L6-v2's elementwise work into its matrix products make ``pcctune eval`` faster?

Every 4th batch of the seven STS test sets' distinct sentences (batched as ``pcctune.modeling.encoding`` does) on
one thread, alternating, in one process: BERT's layers as they are (``sdpa`` attention); the feed-forward's
up-projection with its GELU fused into oneDNN's GEMM and both output projections with their residual add fused
(``torch.ops.mkldnn._linear_pointwise`` with the ``gelu`` and binary ``add`` post-ops, weights reordered once, as
torch's compiler emits for frozen CPU linears); the GELU fused alone; eager attention. Each variant's largest
difference from the first run's vectors is printed. Usage: ``python THIS`` with ``PCCTUNE_DATA`` set.
"""

import os
import time
from pathlib import Path

import torch
from transformers.activations import GELUActivation
from transformers.models.bert import modeling_bert as bert

from pcctune.data.tasks import load_test_tasks
from pcctune.modeling.build import build_model
from pcctune.modeling.cpu_workers import tokenized
from pcctune.modeling.encoding import ENCODER_TOKEN_BUDGET, length_batches, token_lengths

torch.set_num_threads(1)
tasks = load_test_tasks(Path(os.environ["PCCTUNE_DATA"]) / "senteval")
texts = sorted({s for task in tasks for pair in task.pairs for s in (pair.sentence1, pair.sentence2)})
model = build_model("all-MiniLM-L6-v2").eval()
lengths = token_lengths(model, texts)
features = [tokenized(model, [texts[i] for i in b]) for b in length_batches(lengths, ENCODER_TOKEN_BUDGET)][::4]
linear = torch.ops.mkldnn._linear_pointwise
reordered: dict[int, torch.Tensor] = {}


def packed(weight: torch.Tensor) -> torch.Tensor:
    if id(weight) not in reordered:
        reordered[id(weight)] = torch.ops.mkldnn._reorder_linear_weight(weight, None)
    return reordered[id(weight)]


def up_with_gelu(self, hidden):  # BertIntermediate: dense, then GELU (erf)
    assert isinstance(self.intermediate_act_fn, GELUActivation)
    return linear(hidden, packed(self.dense.weight), self.dense.bias, "gelu", [], "none")


def out_with_add(self, hidden, residual):  # BertOutput, BertSelfOutput: dense, (dropout), LayerNorm(· + residual)
    return self.LayerNorm(linear.binary(hidden, residual, packed(self.dense.weight), self.dense.bias, "add"))


ORIGINAL = (bert.BertIntermediate.forward, bert.BertOutput.forward, bert.BertSelfOutput.forward)
VARIANTS = {
    "as they are": ORIGINAL,
    "GELU and adds fused": (up_with_gelu, out_with_add, out_with_add),
    "GELU fused alone": (up_with_gelu, *ORIGINAL[1:]),
    "eager attention": ORIGINAL,
}


def encode(variant: str) -> tuple[float, torch.Tensor]:
    bert.BertIntermediate.forward, bert.BertOutput.forward, bert.BertSelfOutput.forward = VARIANTS[variant]
    model[0].auto_model.config._attn_implementation = "eager" if variant == "eager attention" else "sdpa"
    with torch.inference_mode():
        started = time.perf_counter()
        vectors = torch.cat([model(batch)["sentence_embedding"] for batch in features])
        return time.perf_counter() - started, vectors


encode("as they are")  # warm-up
first = None
for round_ in (1, 2):
    for variant in VARIANTS:
        seconds, vectors = encode(variant)
        first = vectors if first is None else first
        print(f"round {round_}, {variant}: {seconds:.2f} s, max |difference| {(vectors - first).abs().max():.1e}")
