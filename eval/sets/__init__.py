"""Retrieval evaluation sets: each writes a vault and its questions (with gold documents) deterministically."""
