"""What a cold cache key costs: ``model_digest`` of all-MiniLM-L6-v2 as loaded and its whole key, then the weight
hashing of a 7B-sized model (Mistral-7B's tensor shapes in bf16, 14.5 GB, contents set so every page is touched).
Run: python THIS (its output: the .log beside it)."""

import hashlib
import time

import torch

from pcctune.cpu_kind import this_cpu
from pcctune.modeling.build import build_model
from pcctune.modeling.fingerprint import add_tensors, computation_key, model_digest


def seconds(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


print(this_cpu().identity)
model = build_model("all-MiniLM-L6-v2")
size = sum(t.numel() * t.element_size() for t in model.state_dict().values())
for _ in range(3):
    digest = seconds(lambda: model_digest(model))
    key = seconds(lambda: computation_key({}, model, "pcctune.orchestration.pipeline"))
    print(f"all-MiniLM-L6-v2 ({size / 1e6:.0f} MB as loaded): model_digest {digest:.3f} s, whole key {key:.3f} s")
hidden, inner, layers, vocab, kv = 4096, 14336, 32, 32000, 1024
shapes = {"embed": (vocab, hidden), "lm_head": (vocab, hidden)}
for layer in range(layers):
    square, narrow, wide = (hidden, hidden), (kv, hidden), (inner, hidden)
    parts = {"q": square, "k": narrow, "v": narrow, "o": square, "gate": wide, "up": wide, "down": (hidden, inner)}
    shapes |= {f"{layer}.{name}": shape for name, shape in parts.items()}
    shapes |= {f"{layer}.norm1": (hidden,), f"{layer}.norm2": (hidden,)}
tensors = {name: torch.empty(shape, dtype=torch.bfloat16) for name, shape in shapes.items()}
for tensor in tensors.values():
    tensor.view(torch.int16).fill_(1)
total = sum(t.numel() * 2 for t in tensors.values())
for _ in range(2):
    spent = seconds(lambda: add_tensors(hashlib.sha256(), tensors))
    print(f"7B-sized (Mistral-7B's shapes, bf16, {total / 1e9:.2f} GB): {spent:.1f} s, {total / 1e9 / spent:.2f} GB/s")
