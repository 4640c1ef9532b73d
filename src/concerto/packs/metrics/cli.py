"""`concerto metrics local`: a Prometheus and node exporter on this machine to ask about."""

from __future__ import annotations

import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

import click


@click.group()
def metrics() -> None:
    """The metrics pack (003_*.txt): questions about Prometheus metrics."""


@metrics.command("local")
@click.option("--port", type=int, default=9090, show_default=True, help="Prometheus port; 0 or busy: a free one.")
@click.option(
    "--scrape-interval", type=click.IntRange(1, 300), default=5, show_default=True, help="Seconds between scrapes."
)
@click.option(
    "--storage",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where Prometheus keeps its data (default: <data dir>/metrics/local-prometheus, kept between runs).",
)
@click.option("--temp", is_flag=True, help="Keep the data in a temporary directory removed on exit.")
@click.option("--retention", default="15d", show_default=True, help="How long Prometheus keeps data.")
def local(port: int, scrape_interval: int, storage: Path | None, temp: bool, retention: str) -> None:
    """Run Prometheus scraping a node exporter on 127.0.0.1 until Ctrl-C.

    Prints the Prometheus URL and the line that points Concerto at it; in another shell:

    \b
      export CONCERTO_PROMETHEUS_URL=http://127.0.0.1:9090
      concerto ask "show CPU usage for the last hour"

    Needs Debian's packages: apt-get install prometheus prometheus-node-exporter.
    """
    from concerto.packs.metrics.local import (
        INSTALL_COMMAND,
        LocalPrometheus,
        LocalPrometheusError,
        missing_binaries,
        port_is_free,
    )
    from concerto.settings import Settings

    missing = missing_binaries()
    if missing:
        raise click.ClickException(f"{' and '.join(missing)} not found; install them with:\n  {INSTALL_COMMAND}")
    if port and not port_is_free(port):
        click.echo(f"port {port} is in use; taking a free one", err=True)
        port = 0

    def stop_on(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    # SIGINT too: a shell starting a job in the background (`cmd &`) makes it ignore SIGINT,
    # and Python then keeps ignoring it; Ctrl-C and a parent's SIGINT must still stop both.
    signal.signal(signal.SIGTERM, stop_on)
    signal.signal(signal.SIGINT, stop_on)
    workdir = storage or Settings().data_dir / "metrics" / "local-prometheus"
    server: LocalPrometheus | None = None
    tempdir: Path | None = None
    # Everything from here on is undone in `finally`, also when start() fails or is
    # interrupted: the processes stopped and a --temp directory removed.
    try:
        if temp:
            workdir = tempdir = Path(tempfile.mkdtemp(prefix="concerto-prom-"))
        server = LocalPrometheus(
            scrape_interval_s=scrape_interval, workdir=workdir, port=port, retention=retention, die_with_parent=True
        )
        click.echo(f"starting Prometheus and the node exporter (data in {workdir}) ...", err=True)
        try:
            server.start(wait_for_data_s=max(60.0, 4.0 * scrape_interval))
        except LocalPrometheusError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(
            f"Prometheus {server.url} scrapes the node exporter on {server.exporter_target} every {scrape_interval} s."
        )
        click.echo(f"export CONCERTO_PROMETHEUS_URL={server.url}")
        click.echo('then: concerto ask "show CPU usage for the last hour"   (Ctrl-C here stops both)')
        sys.stdout.flush()
        while server.running():
            time.sleep(1)
        raise click.ClickException(f"a process stopped; see {workdir}/processes.log")
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
    finally:
        if server is not None:
            server.stop()
        if tempdir is not None:
            import shutil

            shutil.rmtree(tempdir, ignore_errors=True)
