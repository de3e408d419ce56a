"""The decision graph over git: why code is the way it is.

A repository's history (commits, files, people with AI agents marked), its decision records (DECISIONS.md
sections and ADR files, every version with exact lines, supersession links, same-day conflicts, blame) and
its agent instruction files (every version as dated sections) are read with the ``git`` command into
``<home>/gitgraph.duckdb`` (``ingest``, incremental), and answered from there (``tools``, ``graph``), with
``grounding`` checking whatever a model writes about them. Plain Python: nothing here imports Dagster or
Streamlit, and importing the package loads no submodule, so a caller pays only for what it uses.
"""
