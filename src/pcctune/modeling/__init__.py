"""Models: building a SentenceTransformer from any source, prompt templates, pooling."""
