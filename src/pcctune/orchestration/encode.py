"""``pcctune encode``: embed a few sentences; print their cosine similarities or save the vectors (.npy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.console import Console

from pcctune.io import check_output_file, write_with
from pcctune.modeling.build import PoolingName, build_model
from pcctune.modeling.encoding import encode_texts


def run_encode(
    model: str,
    sentences: list[str],
    template: str | None,
    pooling: PoolingName | None,
    dtype: str,
    output: Path | None,
    console: Console,
) -> np.ndarray:
    """The sentences' embeddings (float32), saved to ``output`` or shown as their cosine matrix."""
    if output is not None:
        check_output_file(output)
    vectors = encode_texts(build_model(model, template=template, pooling=pooling, dtype=dtype), sentences)
    if output is not None:
        write_with(output, lambda handle: np.save(handle, vectors))
        console.print(f"saved {vectors.shape} to {output}")
        return vectors
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    console.print(f"embeddings: {vectors.shape}; cosine similarities:")
    console.print(np.array2string(normed @ normed.T, precision=4))
    return vectors
