"""A throw-away Prometheus scraping a node exporter on loopback (Debian's binaries), for tests and benchmarks.

The metrics tests and `benchmarks/bench_metrics.py` need real series (CPU, memory,
network) from the real binaries, not a mock; both share this start-up code.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from _services.ports import ServiceUnavailable, free_port

NODE_EXPORTER = "prometheus-node-exporter"
PROMETHEUS = "prometheus"
INSTALL_HINT = (
    "apt-get install -y --no-install-recommends prometheus prometheus-node-exporter "
    "(scripts/test.sh does), or set CONCERTO_SKIP_PROMETHEUS=1 to skip the tests that need it"
)


class LocalPrometheusError(ServiceUnavailable):
    """The binaries are missing or did not produce data in time."""


def missing_binaries() -> list[str]:
    """Names of the required binaries that are not on PATH."""
    return [name for name in (NODE_EXPORTER, PROMETHEUS) if shutil.which(name) is None]


@dataclass
class LocalPrometheus:
    """A running node exporter scraped every `scrape_interval_s` by a running Prometheus.

    Use as a context manager, or call `start()` and `stop()`. `url` is the Prometheus
    base URL; `exporter_target` the node exporter's `host:port` (its `instance` label).
    """

    scrape_interval_s: int = 1
    workdir: Path | None = None
    url: str = ""
    exporter_target: str = ""
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _tmp: tempfile.TemporaryDirectory[str] | None = None

    def start(self, wait_for_data_s: float = 60.0, settle_s: float = 0.0) -> LocalPrometheus:
        """Launch both binaries and wait until `node_cpu_seconds_total` has samples, then
        `settle_s` more (so rates over the first seconds have several samples)."""
        missing = missing_binaries()
        if missing:
            raise LocalPrometheusError(f"missing {', '.join(missing)}; install with: {INSTALL_HINT}")
        if self.workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="concerto-prom-")
            self.workdir = Path(self._tmp.name)
        exporter_port, prom_port = free_port(), free_port()
        self.exporter_target = f"127.0.0.1:{exporter_port}"
        self.url = f"http://127.0.0.1:{prom_port}"
        config = self.workdir / "prometheus.yml"
        config.write_text(
            "global:\n"
            f"  scrape_interval: {self.scrape_interval_s}s\n"
            f"  evaluation_interval: {self.scrape_interval_s}s\n"
            "scrape_configs:\n"
            "  - job_name: node\n"
            f"    static_configs: [{{targets: ['{self.exporter_target}']}}]\n"
            "  - job_name: prometheus\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{prom_port}']}}]\n"
        )
        log = (self.workdir / "processes.log").open("ab")
        self._procs.append(
            subprocess.Popen(
                [NODE_EXPORTER, f"--web.listen-address={self.exporter_target}"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        self._procs.append(
            subprocess.Popen(
                [
                    PROMETHEUS,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        log.close()
        try:
            self._wait_for_data(wait_for_data_s)
        except BaseException:
            self.stop()
            raise
        time.sleep(settle_s)
        return self

    def _wait_for_data(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        query = urllib.parse.urlencode({"query": "count(rate(node_cpu_seconds_total[1m]))"})
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise LocalPrometheusError(
                        f"{proc.args!r} exited with {proc.returncode}; see {self.workdir}/processes.log"
                    )
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=2) as resp:
                    if b'"value"' in resp.read():
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise LocalPrometheusError(f"no node_cpu_seconds_total data after {timeout_s:.0f} s")

    def stop(self) -> None:
        """Terminate both processes (then kill them if they linger) and remove the temp dir."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> LocalPrometheus:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
