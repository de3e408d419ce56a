"""The DuckDB catalog: documents, chunks, mentions, statements, extraction runs and builds."""
