"""The agent write path: confirmation records, destinations, field domains, checkpoints and writes.

Plain Python like the rest of ``engramrag``; the MCP tools and the CLI call into it.
"""
