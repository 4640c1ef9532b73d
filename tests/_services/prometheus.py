"""A throw-away Prometheus scraping a node exporter on loopback (Debian's binaries), for tests and benchmarks.

The metrics tests and `benchmarks/bench_metrics.py` need real series (CPU, memory,
network) from the real binaries, not a mock. The start-up code is the product's
(`concerto.packs.metrics.local`, behind `concerto metrics local` and the demo): one place
for the concept; this module adds what the suite needs to say when it cannot start.
"""

from __future__ import annotations

from concerto.packs.metrics.local import (
    INSTALL_COMMAND,
    NODE_EXPORTER,
    PROMETHEUS,
    LocalPrometheus,
    LocalPrometheusError,
    missing_binaries,
)

INSTALL_HINT = (
    f"{INSTALL_COMMAND} (scripts/test.sh does), or set CONCERTO_SKIP_PROMETHEUS=1 to skip the tests that need it"
)

__all__ = [
    "INSTALL_HINT",
    "NODE_EXPORTER",
    "PROMETHEUS",
    "LocalPrometheus",
    "LocalPrometheusError",
    "missing_binaries",
]
