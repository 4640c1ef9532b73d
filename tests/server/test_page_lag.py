"""The page's timeline follows the first question of a server process as closely as the others:
the app's start imports in the background what that question's agents would otherwise import
while its events stream (benchmarks/bench_page.py measures the lag itself).

In a fresh interpreter, since this one has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SLOW = ("mcp.client.stdio", "mcp.client.streamable_http", "anyio._backends._asyncio")

PROBE = """
import asyncio, json, sys
from concerto.server.app import create_app

async def main():
    app = create_app()
    before = [m for m in MODULES if m in sys.modules]
    async with app.router.lifespan_context(app):
        warm = next(t for t in asyncio.all_tasks() if t.get_name() == "warm-up")
        await asyncio.wait_for(warm, 60)
        print(json.dumps({"before": before, "after": [m for m in MODULES if m in sys.modules]}))

MODULES = sys.argv[1:]
asyncio.run(main())
"""


@pytest.mark.parametrize(("agents", "expected"), [("echo", list(SLOW)), ("kpi", [SLOW[-1]])])
def test_the_app_imports_the_first_questions_modules_at_start(tmp_path: Path, agents: str, expected: list[str]) -> None:
    # The MCP SDK only when a pack runs MCP servers (the city pack's echo); anyio's thread runner always.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONCERTO_")}
    env |= {"CONCERTO_DATA_DIR": str(tmp_path), "CONCERTO_AGENTS": agents}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *SLOW], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["before"] == []  # creating the app imports none of them
    assert found["after"] == expected
