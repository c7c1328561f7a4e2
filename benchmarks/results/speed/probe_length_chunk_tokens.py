"""Tokens a training batch runs through the model: each column padded to its longest text (sentence-transformers'
collator) against the length-sorted chunks of ``pcctune.losses.length_chunks.chunk_bounds``, on the stage-2 set
filtered at ``pair`` (STS-B + SICK-R train, 5,398 pairs) with all-MiniLM-L6-v2's tokenizer, batches of 64 pairs in
a seeded shuffle, one epoch. A count, not a timing. Run: PCCTUNE_DATA=DIR python THIS (its output: the .log
beside it)."""

import random

from pcctune import stage2_dataset
from pcctune.losses.length_chunks import chunk_bounds
from pcctune.modeling.build import build_model

BATCH, SEED = 64, 0

model = build_model("all-MiniLM-L6-v2")
pairs = stage2_dataset(leakage="pair")
limit = model.max_seq_length


def length(text: str) -> int:
    return min(len(model.tokenizer(text)["input_ids"]), limit)


rows = [(length(a), length(b)) for a, b in zip(pairs["sentence1"], pairs["sentence2"], strict=True)]
order = list(range(len(rows)))
random.Random(SEED).shuffle(order)
real = padded = chunked = forwards = 0
for start in range(0, len(order), BATCH):
    batch = [rows[i] for i in order[start : start + BATCH]]
    columns = [[a for a, _ in batch], [b for _, b in batch]]
    real += sum(map(sum, columns))
    padded += sum(len(column) * max(column) for column in columns)
    lengths = sorted((n for column in columns for n in column), reverse=True)
    bounds = chunk_bounds(lengths)
    chunked += sum((end - begin) * lengths[begin] for begin, end in bounds)
    forwards += len(bounds)
batches = -(-len(order) // BATCH)
print(f"{len(rows)} pairs, {batches} batches of {BATCH}, max_seq_length {limit}")
print(f"real tokens {real}; each column padded to its longest: {padded} ({padded / real:.2f} per real token)")
print(f"length-sorted chunks: {chunked} ({chunked / real:.2f} per real token), {forwards / batches:.1f} forward passes")
print(f"chunks against padded columns: {chunked / padded:.2f} of the tokens")
