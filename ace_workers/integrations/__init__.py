"""Bridges between ace-workers and the systems its users' agents run in.

Each integration lives in a subpackage of its own and needs an optional extra;
nothing here imports a third-party package at ``import ace_workers`` time.

- :mod:`ace_workers.integrations.mcp`: the MCP server (``ace-workers mcp``, extra ``mcp``).
"""
