"""`concerto serve` as its own process on a free loopback port, for tests that need a real server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from .ports import free_port, stop


@dataclass
class Served:
    base: str  # http://127.0.0.1:PORT
    process: subprocess.Popen[bytes]

    def terminate_timed(self, wait_s: float = 60) -> float | None:
        """Send SIGTERM and return the seconds from the signal to the process's exit (None: still
        running after `wait_s`). A thread that only waits for the exit stops the clock, so a busy
        test (its event loop reading the answers) does not stretch the time measured."""
        exited: list[float] = []

        def wait() -> None:
            self.process.wait()
            exited.append(time.monotonic())

        waiting = threading.Thread(target=wait, name="serve-exit", daemon=True)
        waiting.start()
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        waiting.join(wait_s)
        return exited[0] - started if exited else None


@contextmanager
def running_serve(env: Mapping[str, str | None], *, ready: str = "/health", timeout_s: float = 60) -> Iterator[Served]:
    """Start `concerto serve` with `env` over this process's environment (a value None removes
    that variable) and yield once `ready` answers 200; stopped on exit. A server that dies or
    never answers fails with its output."""
    merged = {**os.environ}
    for name, value in env.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "concerto.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=merged,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(base + ready, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                output = process.stdout.read().decode() if process.stdout else ""
                raise AssertionError(f"concerto serve did not answer {ready}: {output[-2000:]}")
            time.sleep(0.2)
        yield Served(base, process)
    finally:
        stop(process)
