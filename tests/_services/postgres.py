"""A throwaway PostgreSQL cluster on loopback, from Debian's `postgresql` package.

About a second to create and start (initdb + pg_ctl, no systemd). As root, the cluster
runs as the `postgres` user, which owns a fresh directory under /tmp. The superuser is
`postgres` with trust authentication on 127.0.0.1; `url` is a libpq URL.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .ports import ServiceUnavailable, free_port

HINT = "apt-get install -y --no-install-recommends postgresql (scripts/test.sh does), or set CONCERTO_SKIP_POSTGRES=1"


@dataclass(frozen=True)
class Postgres:
    """A running cluster: its URL, port, the directory holding data and log, and its binaries."""

    url: str
    port: int
    root: Path
    bin: Path

    def psql(self, sql: str) -> str:
        """Run one statement with psql and return its unaligned output."""
        done = subprocess.run(
            [str(self.bin / "psql"), self.url, "-XAtqc", sql], capture_output=True, text=True, timeout=30, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout.strip()


def binaries() -> Path:
    """The newest installed server's bin directory (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not found:
        raise ServiceUnavailable("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    return found[-1].parent


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    """Create, start and finally remove a cluster."""
    bindir = binaries()
    root = Path(tempfile.mkdtemp(prefix="concerto-pg-"))
    as_postgres = os.geteuid() == 0  # the server refuses to run as root
    if as_postgres:
        entry = pwd.getpwnam("postgres")
        os.chown(root, entry.pw_uid, entry.pw_gid)
    port = free_port()

    def run(*argv: str) -> None:
        command = ["runuser", "-u", "postgres", "--", *argv] if as_postgres else list(argv)
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = root / "pg.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{Path(argv[0]).name} failed: {done.stderr.strip() or done.stdout.strip()}\n{tail}")

    data = root / "data"
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "pg.log"), "-w", "start")
        yield Postgres(f"postgresql://postgres@127.0.0.1:{port}/postgres", port, root, bindir)
    finally:
        if (data / "postmaster.pid").exists():
            with suppress(RuntimeError):
                run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
