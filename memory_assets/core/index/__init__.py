"""The derived tier: the LanceDB table, the rows a file should produce, the indexer (its only writer), embeddings and retrieval."""
