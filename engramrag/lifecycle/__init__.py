"""The document lifecycle as plain functions: scan the vault, sync documents, extract graphs, summarise.

The Dagster assets in ``assets/`` call these, one bucket at a time.
"""
