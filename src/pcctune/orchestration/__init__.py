"""Orchestration: the workflows that combine training and evaluation (the pipeline, the eval runner, bound, report, demonstration search)."""
