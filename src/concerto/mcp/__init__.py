"""MCP in Concerto: a client for any MCP server, its tools as agents, and packs' servers.

`client` keeps one session per server; `adapter` turns the tools of the servers in
`CONCERTO_MCP_SERVERS_FILE` into agents (the `mcp` pack's discovery); `tools` calls a
tool from an agent; `errors` is the error body of 002_*.txt both sides share; `serve`
runs the MCP servers that packs declare (`concerto mcp serve NAME`).
"""
