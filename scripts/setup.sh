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
# This machine's pip config lists local index folders that may not exist; pip warns once
# per package about them. Keep the rest of stderr.
.venv/bin/python -m pip install --quiet -e "$spec" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
