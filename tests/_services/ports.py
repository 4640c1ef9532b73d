"""Free loopback ports, waiting for a service to listen, and the errors of one that cannot start."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def dead_url(path: str = "") -> str:
    """An http URL on loopback where nothing listens (for 'backend is down' tests)."""
    return f"http://127.0.0.1:{free_port()}{path}"


class ServiceUnavailable(RuntimeError):
    """The service cannot run here: a binary or package is missing."""


class ServiceFailed(RuntimeError):
    """A service process died or did not become ready in time."""


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout_s: float = 30) -> None:
    """Return once something accepts connections on `port`; raise if `proc` dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServiceFailed(f"{_name(proc)} exited with code {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise ServiceFailed(f"nothing listens on port {port} after {timeout_s:g} s")


def wait_for_http(url: str, proc: subprocess.Popen[bytes] | None = None, timeout_s: float = 60) -> httpx.Response:
    """Return the first 2xx answer of GET `url`; raise if `proc` dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc is not None and proc.poll() is not None:
            raise ServiceFailed(f"{_name(proc)} exited with code {proc.returncode} before answering {url}")
        try:
            reply = httpx.get(url, timeout=2.0)
            if reply.is_success:
                return reply
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise ServiceFailed(f"{url} did not answer within {timeout_s:g} s")
        time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes], grace_s: float = 10) -> None:
    """Terminate a process, killing it if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace_s)


def _name(proc: subprocess.Popen[bytes]) -> str:
    args = proc.args if isinstance(proc.args, list | tuple) else [proc.args]
    return str(args[0]).rsplit("/", 1)[-1] if args else "process"
