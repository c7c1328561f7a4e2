"""Training: typed run configs, one stage = one sentence-transformers trainer run, the pipeline."""
