#!/usr/bin/env bash
# The whole test suite with the real services it needs, on a fresh Debian machine:
# installs Prometheus + node exporter and PostgreSQL (apt), the project with its dev
# extras, the llama.cpp OpenAI-compatible server and its small model, the MCP conformance
# suite (npm); then runs every check:
# ruff (lint + format), mypy, and pytest (whose tests/_services start Prometheus,
# PostgreSQL, a ChromaDB server, the MCP servers, the LLM server and a weather replay
# server on loopback ports by themselves; CONCERTO_SKIP_<SERVICE>=1 skips one, and the
# run's summary says so).
set -uo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }

step "system packages: prometheus, prometheus-node-exporter, postgresql, chromium (the page's browser tests)"
if ! command -v prometheus >/dev/null || ! command -v prometheus-node-exporter >/dev/null \
    || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v chromium >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus prometheus-node-exporter \
        postgresql chromium >/dev/null || { echo "apt-get install failed"; exit 1; }
fi

step "python environment"
bash scripts/setup.sh dev || exit 1

step "LLM server for the llm tier (llama-cpp-python + SmolLM2 GGUF)"
bash scripts/install-llm-server.sh .venv/bin/python || exit 1

step "MCP conformance suite (npm: @modelcontextprotocol/conformance + Node 22)"
bash scripts/install-mcp-conformance.sh || exit 1

status=0
step "ruff"
.venv/bin/ruff check src tests benchmarks || status=1
.venv/bin/ruff format --check src tests benchmarks || status=1
step "mypy"
.venv/bin/mypy || status=1

step "pytest"
.venv/bin/python -m pytest -q -rfEs -p no:cacheprovider --durations=15 "$@"  # -rfEs: every failure, error and skip (with its reason)
rc=$?
if [ $rc -eq 5 ]; then  # no test collected: fine for a selection (-k, a path), a failure for the suite
    if [ $# -gt 0 ]; then echo "pytest: nothing selected by '$*'"; rc=0; else echo "pytest collected no tests"; rc=1; fi
fi
[ $rc -ne 0 ] && status=$rc
step "done, exit $status"
exit $status
