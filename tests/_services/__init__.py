"""The real services the test suite starts, in one place, under one policy (`policy.py`).

`ports` (free ports, waiting), `llama` (an OpenAI-compatible LLM server), `prometheus`
(Prometheus + node exporter), `chroma` (a ChromaDB server), `postgres` (a throwaway
PostgreSQL cluster), `mcp` (packs' MCP servers over HTTP), `weather` (a replaying weather
provider), `threaded_http` (small misbehaving HTTP servers). tests/conftest.py turns them
into session fixtures; the benchmarks import them too.
"""
