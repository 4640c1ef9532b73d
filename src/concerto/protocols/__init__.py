"""Concerto inside the tools people already use: an MCP server, an OpenAI-compatible
endpoint, an A2A endpoint and LangGraph adapters, each a thin layer over one `Orchestrator`.

Every surface returns the same contracts and streams the same events; a failure in a
protocol's layer comes back in that protocol's own error shape.
"""
