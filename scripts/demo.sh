#!/usr/bin/env bash
# The main job on embedded defaults: no server, no API key, demo data loaded on first use.
# Sets up .venv, then asks one question of each built-in pack and prints the answers.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
bash scripts/setup.sh
export CONCERTO_DATA_DIR="${CONCERTO_DATA_DIR:-$PWD/.data}"
c=.venv/bin/concerto

ask() {  # ask QUESTION [FLAGS...]: print the question, then the answer
    echo
    echo "\$ concerto ask \"$1\" ${*:2}"
    "$c" ask "$@"
}

"$c" agents
ask 'echo "hello from Concerto"'
ask "what time is it in Chicago?" --now 2025-11-02T07:30:00Z
ask "home-loan attrition rate previous 4 months" --now 2025-06-15T12:00:00Z
ask "kpi-attrition-rate department-home-loan month-2025-05-01" --format brief
ask "what's the weather and the time in Seattle?" --trace
# Your own tables (here the demo table, loaded on first use; `concerto data load FILE` adds yours).
ask "segment our customers by sales tier"
ask "which customers are at risk?"
ask "show me all semiconductor companies"
ask "segment customers by sales value, then show the sales trend of each segment"
# Expected to fail here: no Prometheus is configured, so the metrics agent says which
# setting to set (CONCERTO_PROMETHEUS_URL); the script goes on.
ask "show CPU usage for the last hour" || echo "(exit $? as expected: no metrics backend configured)"
echo
echo "demo finished in $(( $(date +%s) - started )) s"
