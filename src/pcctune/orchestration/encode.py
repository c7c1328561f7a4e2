"""``pcctune encode``: embed a few sentences; print their cosine similarities or save the vectors (.npy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.console import Console

from pcctune.io import check_output_file, write_with
from pcctune.modeling.build import PoolingName, build_model
from pcctune.modeling.encoding import encode_texts
from pcctune.modeling.prompts import check_prompt_choice


def run_encode(
    model: str,
    sentences: list[str],
    template: str | None,
    pooling: PoolingName | None,
    dtype: str,
    output: Path | None,
    console: Console,
    prompt: str | None = None,
    prompt_name: str | None = None,
) -> np.ndarray:
    """The sentences' embeddings (float32) under the model's default prompt, or ``prompt`` / ``prompt_name``
    (``pcctune.modeling.prompts``), saved to ``output`` or shown as their cosine matrix."""
    check_prompt_choice(prompt, prompt_name, model)
    if output is not None:
        check_output_file(output)
    built = build_model(model, template=template, pooling=pooling, dtype=dtype)
    vectors = encode_texts(built, sentences, prompt=prompt, prompt_name=prompt_name)
    if output is not None:
        write_with(output, lambda handle: np.save(handle, vectors))
        console.print(f"saved {vectors.shape} to {output}")
        return vectors
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    console.print(f"embeddings: {vectors.shape}; cosine similarities:")
    console.print(np.array2string(normed @ normed.T, precision=4))
    return vectors
