"""pcctune: train and evaluate sentence embeddings past the contrastive ceiling on STS.

Implements Pcc-tuning (two-stage contrastive + Pearson-loss training), prompt-based
decoder embeddings (PromptEOL/STH/SUM), and the SimCSE/SentEval STS evaluation protocol
on top of sentence-transformers.
"""

import importlib.metadata

from pcctune.errors import PcctuneError

__version__ = importlib.metadata.version("pcctune")  # the one copy lives in pyproject.toml
__all__ = ["PcctuneError", "__version__"]
