#!/usr/bin/env bash
# Rebuild BENCHMARKS.md from the per-pack result files that each benchmark's run produced.
# Each results/*.md holds one side-by-side run with the command that produced it.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  echo "# Benchmarks"
  echo
  echo "Every figure below was measured side by side in one run of the command shown with it,"
  echo "on this project's machine kind (2 cores, 24 GiB, Debian 12, Python 3.11). Ratios are"
  echo "what to compare; absolute times move with the machine's load. To re-measure, from the"
  echo "repository root (each benchmark is a module of the \`benchmarks\` package and imports the test"
  echo "suite's services as \`tests._services\`, so it runs with \`python -m\`):"
  echo
  echo '```bash'
  echo ".venv/bin/python -m benchmarks.bench_engine > benchmarks/results/engine.md"
  echo ".venv/bin/python -m benchmarks.bench_city --output benchmarks/results/city.md"
  echo ".venv/bin/python -m benchmarks.bench_kpi --records 1000000   # writes results/kpi.md"
  echo ".venv/bin/python -m benchmarks.bench_kpi_load --baseline e24e905   # writes results/kpi_load.md"
  echo ".venv/bin/python -m benchmarks.bench_metrics --output benchmarks/results/metrics.md   # starts its own Prometheus"
  echo ".venv/bin/python -m benchmarks.bench_analytics   # writes results/analytics.md; starts its own PostgreSQL"
  echo ".venv/bin/python -m benchmarks.bench_accuracy --backend both --output benchmarks/results/accuracy.md"
  echo ".venv/bin/python -m benchmarks.bench_questions   # KPI and metrics question sets; writes results/questions.md"
  echo ".venv/bin/python -m benchmarks.bench_commercial --causal-venv .venv-causal   # writes results/commercial.md"
  echo ".venv/bin/python -m benchmarks.bench_page   # writes results/page.md; Debian's Chromium against concerto serve"
  echo ".venv/bin/python -m benchmarks.bench_protocols   # writes results/protocols.md: MCP, OpenAI, A2A, Python API"
  echo ".venv/bin/python -m benchmarks.bench_ray   # writes results/ray.md; starts a local Ray cluster"
  echo ".venv/bin/python -m benchmarks.bench_embed --repeats 3   # MiniLM on the demo table's descriptions; results/first_use.md by hand"
  echo ".venv/bin/python -m benchmarks.bench_faults --baseline REF --output benchmarks/results/faults.md   # a backend that never replies, then SIGTERM"
  echo ".venv/bin/python -m benchmarks.bench_data_edges --baseline a33cea2 --cprofile   # writes results/data_edges.md"
  echo "bash benchmarks/compose.sh                     # rebuilds this file"
  echo '```'
  for part in engine city kpi kpi_load metrics questions packs analytics accuracy commercial page protocols ray first_use faults data_edges wtq; do
    f="benchmarks/results/$part.md"
    [ -f "$f" ] || continue
    echo
    case $part in
      engine) echo "## Engine (issue 2)";;
      analytics) echo "## Analytics pack (issue 14)";;
      accuracy) echo "## Analytics accuracy without an LLM (issue 14)";;
      first_use) echo "## First use (issue 26)";;
      data_edges) echo "## Data layer edges (issue 26)";;
    esac
    echo
    # The accuracy report's list of failures stays in its own file (linked), not here.
    sed -e '/^## Failures/,$d' -e 's/^# /### /' -e 's/^## /### /' "$f"
    [ "$part" = accuracy ] && echo && echo "Every failure, with what came back and why: [benchmarks/results/accuracy.md](benchmarks/results/accuracy.md)."
  done
} > BENCHMARKS.md
echo "BENCHMARKS.md rebuilt"
