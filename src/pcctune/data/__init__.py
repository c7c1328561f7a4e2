"""Data: STS pairs, NLI triplets, the SentEval layout and the train/test leakage filter."""
