"""The MCP protocol's own conformance suite against our three servers over streamable HTTP.

The scenarios that apply to any server: initialize, ping, tools-list (every tool needs a
description), DNS-rebinding protection and several concurrent SSE streams. The suite and
the Node 22 it needs are installed by `scripts/install-mcp-conformance.sh` (test.sh runs
it); when they are missing the test fails with that hint, unless
CONCERTO_SKIP_CONFORMANCE=1 (the services' policy of tests/_services/policy.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _services.mcp import SERVER_SCENARIOS, conformance_suite, run_conformance


@pytest.fixture(scope="module")
def conformance() -> tuple[Path, dict[str, str]]:
    return conformance_suite()


@pytest.mark.parametrize("kind", ["weather", "datetime", "echo"])
@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_conformance(
    conformance: tuple[Path, dict[str, str]], http_servers: dict[str, str], kind: str, scenario: str
) -> None:
    run_conformance(conformance, http_servers[kind], scenario)
