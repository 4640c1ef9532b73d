"""A backend that refuses, for tests of what clients say when they fail (one that never
answers is `_services.blackhole`).

`locked_prometheus`: a real Prometheus (Debian's binary) that requires HTTP basic auth, so a
wrong password in the URL gets Prometheus's own 401.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .ports import free_port, stop, wait_for_port
from .prometheus import PROMETHEUS

USER = "concerto"
# bcrypt of "the-right-one" (cost 4: Prometheus checks it on every request)
_HASH = "$2b$04$NTFY3eDtSfp0mXoPgQoQQ.sNojpoNow4CqQV8BURfDbRm9qU9k1CK"


@contextmanager
def locked_prometheus(workdir: Path) -> Iterator[str]:
    """A Prometheus that answers 401 unless the user `concerto` gives the right password; yields
    its base URL (without credentials)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n")
    (workdir / "web.yml").write_text(f"basic_auth_users:\n  {USER}: '{_HASH}'\n")
    port = free_port()
    with (workdir / "prometheus.log").open("ab") as log:
        proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--web.config.file={workdir / 'web.yml'}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, proc, timeout_s=60)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
