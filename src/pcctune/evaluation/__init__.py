"""Evaluation: SimCSE/SentEval STS protocol, result records and tables."""
