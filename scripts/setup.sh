#!/usr/bin/env bash
# Create .venv (if needed) and install Concerto into it, with the extras named in $1
# (e.g. "dev"). Idempotent; used by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
spec="."
[ -n "$extras" ] && spec=".[$extras]"
.venv/bin/python -m pip install --quiet -e "$spec"
