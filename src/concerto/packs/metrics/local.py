"""A local metrics source: Prometheus scraping a node exporter, both on loopback.

`concerto metrics local` runs it for a user who has no Prometheus (Debian's packages
`prometheus prometheus-node-exporter`); `scripts/demo.sh` runs it to answer a metrics
question about the machine it runs on; the test suite and the metrics benchmark start it
through the suite's service starters. One start-up path for all of them.
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

NODE_EXPORTER = "prometheus-node-exporter"
PROMETHEUS = "prometheus"
INSTALL_COMMAND = "apt-get install -y --no-install-recommends prometheus prometheus-node-exporter"


class LocalPrometheusError(RuntimeError):
    """The binaries are missing, a process died, or no data came in time."""


def missing_binaries() -> list[str]:
    """Names of the required binaries that are not on PATH."""
    return [name for name in (NODE_EXPORTER, PROMETHEUS) if shutil.which(name) is None]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether `port` on `host` can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the child gets SIGTERM when the process that started it dies (even by SIGKILL)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class LocalPrometheus:
    """A running node exporter scraped every `scrape_interval_s` by a running Prometheus.

    Use as a context manager, or call `start()` and `stop()`. `url` is the Prometheus base
    URL; `exporter_target` the node exporter's `host:port` (its `instance` label). Without
    `workdir` the data lives in a temporary directory removed by `stop()`; with one, the
    data stays there for the next start. `port=0` takes a free port.
    """

    scrape_interval_s: int = 1
    workdir: Path | None = None
    port: int = 0
    retention: str = "15d"
    die_with_parent: bool = False
    host: str = "127.0.0.1"
    url: str = ""
    exporter_target: str = ""
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _tmp: tempfile.TemporaryDirectory[str] | None = None

    def start(self, wait_for_data_s: float = 60.0, settle_s: float = 0.0) -> LocalPrometheus:
        """Launch both binaries and wait until `node_cpu_seconds_total` has a rate (two scrapes),
        then `settle_s` more (so rates over the first seconds have several samples)."""
        missing = missing_binaries()
        if missing:
            raise LocalPrometheusError(f"missing {', '.join(missing)}; install with: {INSTALL_COMMAND}")
        if self.workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="concerto-prom-")
            self.workdir = Path(self._tmp.name)
        self.workdir.mkdir(parents=True, exist_ok=True)
        exporter_port, prom_port = free_port(self.host), self.port or free_port(self.host)
        self.exporter_target = f"{self.host}:{exporter_port}"
        self.url = f"http://{self.host}:{prom_port}"
        config = self.workdir / "prometheus.yml"
        config.write_text(
            "global:\n"
            f"  scrape_interval: {self.scrape_interval_s}s\n"
            f"  evaluation_interval: {self.scrape_interval_s}s\n"
            "scrape_configs:\n"
            "  - job_name: node\n"
            f"    static_configs: [{{targets: ['{self.exporter_target}']}}]\n"
            "  - job_name: prometheus\n"
            f"    static_configs: [{{targets: ['{self.host}:{prom_port}']}}]\n"
        )
        preexec: Callable[[], None] | None = (
            _die_with_parent if self.die_with_parent and sys.platform == "linux" else None
        )
        with (self.workdir / "processes.log").open("ab") as log:
            self._procs.append(
                subprocess.Popen(
                    [NODE_EXPORTER, f"--web.listen-address={self.exporter_target}"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=preexec,  # set only by the CLI, which starts no threads
                )
            )
            self._procs.append(
                subprocess.Popen(
                    [
                        PROMETHEUS,
                        f"--config.file={config}",
                        f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                        f"--storage.tsdb.retention.time={self.retention}",
                        f"--web.listen-address={self.host}:{prom_port}",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=preexec,
                )
            )
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

    def running(self) -> bool:
        """Whether both processes are still alive."""
        return bool(self._procs) and all(proc.poll() is None for proc in self._procs)

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
            self.workdir = None

    def __enter__(self) -> LocalPrometheus:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
