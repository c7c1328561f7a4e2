"""Step 1 of the regression paper's two-step recipe (§4.2): fit the head, encoder frozen.

A contrastive-pretrained encoder has good embeddings but a randomly initialised head, so the
head is first trained alone on NLI pairs scored 0/1/2. With the encoder frozen, the embeddings
do not change: they are computed once and the head is fitted on them directly, which costs one
encoding pass instead of an epoch of forward passes. Step 2 is an ordinary stage that trains
encoder and head together on the filtered STS set.
"""

from __future__ import annotations

import torch

from pcctune.data.sts import STSPair
from pcctune.losses.regression import RegressionLoss, penalty
from pcctune.seeding import DEFAULT_SEED


def warm_up_head(
    loss: RegressionLoss,
    pairs: list[STSPair],
    epochs: int = 1,
    lr: float = 1e-3,
    batch_size: int = 64,
    seed: int = DEFAULT_SEED,
) -> float:
    """Train ``loss.head`` on ``pairs`` with the encoder frozen; return the last epoch's mean loss."""
    model = loss.model
    sentences = sorted({s for p in pairs for s in (p.sentence1, p.sentence2)})
    with torch.no_grad():
        vectors = model.encode(sentences, convert_to_tensor=True, batch_size=64, show_progress_bar=True)
    # Everything on the device the embeddings came back on (the model's): on a GPU the head, built on
    # the CPU with the loss, would otherwise meet CUDA tensors.
    device = vectors.device
    loss.head.to(device)
    index = {s: i for i, s in enumerate(sentences)}
    u = vectors[[index[p.sentence1] for p in pairs]]
    v = vectors[[index[p.sentence2] for p in pairs]]
    labels = torch.tensor([p.score for p in pairs], dtype=torch.float32, device=device)
    optimizer = torch.optim.AdamW(loss.head.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    mean = float("nan")
    for _ in range(epochs):
        order = torch.randperm(len(pairs), generator=generator).to(device)
        total = 0.0
        for start in range(0, len(pairs), batch_size):
            batch = order[start : start + batch_size]
            x = (loss.predict(u[batch], v[batch]) - labels[batch]).abs()
            value = penalty(loss.penalty_name, x, loss.k, loss.x0).mean()
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
            total += float(value.detach()) * len(batch)
        mean = total / len(pairs)
    return mean
