#!/usr/bin/env bash
# The main job on embedded defaults: no server, no API key, demo data prepared on first use.
# Sets up .venv (with the `tour` extra: what the README's tour uses beyond the core, the A2A
# endpoint and the official OpenAI client), then asks one question of each built-in pack and
# prints the answers.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
bash scripts/setup.sh tour
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
# Your own tables (here the demo table, prepared on first use before the agents start, which
# stderr says; `concerto data load FILE` adds yours, e.g. examples/sales.csv).
ask "segment our customers by sales tier"
ask "which customers are at risk?"
ask "show me all semiconductor companies"
ask "segment customers by sales value, then show the sales trend of each segment"
# Metrics of this machine: `concerto metrics local` runs Prometheus scraping a node exporter
# on free loopback ports (a temp dir, stopped on exit). The Debian packages are installed
# as scripts/test.sh does when apt is there and we are root; otherwise the demo says how
# to get them and goes on.
metrics_pid=""
metrics_out=""
policy=/usr/sbin/policy-rc.d
policy_saved=""
policy_ours=""
restore_policy() {  # put back the policy-rc.d there was (or none) after the install
    if [ -n "$policy_ours" ]; then
        if [ -n "$policy_saved" ]; then mv -f "$policy_saved" "$policy"; else rm -f "$policy"; fi
        policy_ours=""
    fi
    return 0
}
stop_metrics() {
    if [ -n "$metrics_pid" ] && kill -0 "$metrics_pid" 2>/dev/null; then
        kill -TERM "$metrics_pid" 2>/dev/null || true  # a script's background job ignores SIGINT
        wait "$metrics_pid" 2>/dev/null || true
    fi
    metrics_pid=""
    [ -n "$metrics_out" ] && rm -f "$metrics_out"
    return 0
}
trap 'stop_metrics; restore_policy' EXIT
if ! command -v prometheus >/dev/null || ! command -v prometheus-node-exporter >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        echo
        echo "installing prometheus and prometheus-node-exporter (apt) for the metrics question ..."
        # The packages start and enable prometheus.service (:9090) and the node exporter
        # (:9100); this demo runs its own on free ports. A policy-rc.d that answers 101 keeps
        # the services from starting during the install; they are disabled afterwards when
        # systemd runs, so nothing stays up or starts at the next boot.
        if [ -e "$policy" ]; then policy_saved=$(mktemp) && cp -p "$policy" "$policy_saved"; fi
        policy_ours=1
        printf '#!/bin/sh\n# written by concerto scripts/demo.sh during its apt install\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        if DEBIAN_FRONTEND=noninteractive apt-get update -qq \
            && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                prometheus prometheus-node-exporter >/dev/null; then
            if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
                systemctl disable --now prometheus.service prometheus-node-exporter.service >/dev/null 2>&1 || true
            fi
        else
            echo "(apt-get install failed)"
        fi
        restore_policy
    fi
fi
if command -v prometheus >/dev/null && command -v prometheus-node-exporter >/dev/null; then
    metrics_out=$(mktemp)
    "$c" metrics local --temp --port 0 --scrape-interval 1 >"$metrics_out" 2>&1 &
    metrics_pid=$!
    url=""
    # The command prints the URL once the first scrapes are in, or exits when it cannot
    # start (after its own wait): wait for whichever comes first, however long it takes.
    while :; do
        url=$(sed -n 's/^export CONCERTO_PROMETHEUS_URL=//p' "$metrics_out")
        [ -n "$url" ] && break
        kill -0 "$metrics_pid" 2>/dev/null || break
        sleep 0.5
    done
    if [ -n "$url" ]; then
        sleep 5  # a few more scrapes, so the rates have several points
        echo
        echo "\$ concerto metrics local   # Prometheus + node exporter of this machine at $url"
        for question in "show CPU usage for the last hour" "CPU usage per mode"; do
            # a metrics question that fails is reported, and the demo goes on
            CONCERTO_PROMETHEUS_URL="$url" ask "$question" \
                || echo "(the metrics question failed with exit status $?; the reason is printed above)"
        done
    else
        echo "(the local Prometheus did not start:)"; cat "$metrics_out"
    fi
    stop_metrics
else
    echo
    echo "(skipping the metrics question: Prometheus and its node exporter are not installed;"
    echo " get them with: sudo apt-get install prometheus prometheus-node-exporter,"
    echo " then: concerto metrics local   # or set CONCERTO_PROMETHEUS_URL to your Prometheus)"
fi
echo
echo "demo finished in $(( $(date +%s) - started )) s"
