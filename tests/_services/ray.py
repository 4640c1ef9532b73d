"""A local Ray cluster for the tests: `ray start --head --block` on loopback, joined by address.

A head of its own (not `ray.init()` in the test process) so the tests exercise
`CONCERTO_RAY_ADDRESS`, several processes can share it, and a test can stop a cluster to see
what an unreachable one does. It uses token authentication (`RAY_AUTH_MODE=token`, a token made
for the run), as a cluster anyone can reach must. Its workers import the tests' modules (agents defined in tests
travel by reference to them) through PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .ports import ServiceUnavailable, free_port, stop

HINT = "pip install 'ray>=2.40' (the dev extra has it)"
ROOT = Path(__file__).resolve().parents[2]
CPUS = 8  # logical CPUs the head offers: tasks of one plan run at once on 2 real cores


@dataclass
class RayCluster:
    address: str
    process: subprocess.Popen[bytes]
    temp_dir: Path
    auth: dict[str, str]  # the environment a client needs to join (token authentication)

    def stop(self) -> None:
        """Stop the head and everything it started (its own process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        stop(self.process)


def start_cluster(timeout_s: float = 90) -> RayCluster:
    ray = Path(sys.executable).with_name("ray")
    if not ray.exists():
        raise ServiceUnavailable(f"{ray} is missing")
    port = free_port()
    temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths are limited
    paths = [str(ROOT / "tests"), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
    env = {**os.environ, **auth, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "RAY_USAGE_STATS_ENABLED": "0"}
    args = ["start", "--head", "--block", f"--port={port}", f"--num-cpus={CPUS}", "--include-dashboard=false"]
    args += ["--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}", "--disable-usage-stats"]
    process = subprocess.Popen(
        [str(ray), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    cluster = RayCluster(f"127.0.0.1:{port}", process, temp_dir, auth)
    deadline = time.monotonic() + timeout_s
    while not (temp_dir / "session_latest").exists() or not _listening(port):
        if process.poll() is not None:
            error = process.stderr.read().decode()[-2000:] if process.stderr else ""
            raise ServiceUnavailable(f"ray start exited with {process.returncode}: {error}")
        if time.monotonic() > deadline:
            cluster.stop()
            raise ServiceUnavailable(f"the Ray head did not listen on {port} within {timeout_s:.0f} s")
        time.sleep(0.2)
    return cluster


def _listening(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def warm_up_workers(n: int = CPUS) -> None:
    """Start `n` workers that have imported Concerto's task body, so the first tests' timings
    measure scheduling, not Python starting (an idle worker stays up to the head's CPU count)."""
    import asyncio
    from datetime import UTC, datetime

    import ray

    from concerto.cluster.host import run_task
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.settings import Settings
    from concerto.testing import fake_agent

    task = ray.remote(run_task).options(num_returns="streaming")
    args = ({}, OrchestratorInput(query="warm up"), datetime.now(UTC), "warm", [])

    async def one() -> None:
        async for ref in task.remote(fake_agent("warm", delay_s=0.5), Settings(), *args):
            await ref

    async def all_at_once() -> None:
        await asyncio.gather(*(one() for _ in range(n)))

    asyncio.run(all_at_once())
