"""Extractors turn one document into entities, relations and statements."""
