"""Orchestration: workflows that combine the layers below (pipeline, eval runner, bound, report, icl, stage-2 data)."""
