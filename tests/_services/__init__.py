"""The real services the test suite starts, in one place, under one policy (`policy.py`).

`ports` (free ports, waiting), `llama` (an OpenAI-compatible LLM server), `prometheus`
(Prometheus + node exporter), `chroma` (a ChromaDB server), `postgres` (a throwaway
PostgreSQL cluster), `mcp` (packs' MCP servers over HTTP), `weather` (a replaying weather
provider), `threaded_http` (small misbehaving HTTP servers). The conftests turn them into
session fixtures: tests/conftest.py those of several folders, a folder's conftest its own
(packs/metrics: Prometheus, packs/kpi: ChromaDB, packs/city: the weather replay and MCP servers).

The benchmarks import them too, as `tests._services` (run as modules from the repository root:
`python -m benchmarks.bench_page`); inside the package, imports are relative so both names work.
"""
