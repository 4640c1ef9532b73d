"""What the app does as it starts (`server/startup.py`): a pack's `warm_up` runs when one of
its agents is loaded, and only then; one that fails is logged and the others still run. The
server names no pack for it (the city pack's MCP SDK: tests/server/test_page_lag.py)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from concerto.agents.loader import Packs
from concerto.agents.pack import Pack
from concerto.orchestrator.engine import Orchestrator
from concerto.server import startup
from concerto.settings import Settings
from concerto.testing import fake_agent


def _warm_up(packs: Packs, data_dir: Path) -> None:
    asyncio.run(startup.warm_up(Orchestrator(Settings(data_dir=data_dir), packs=packs)))


def test_a_packs_warm_up_runs_when_one_of_its_agents_is_loaded(tmp_path: Path) -> None:
    ran: list[str] = []

    async def coroutine() -> None:
        ran.append("async")

    packs = Packs(
        [
            Pack(name="served", agents=[fake_agent("a")], warm_up=coroutine),
            Pack(name="plain", agents=[fake_agent("b"), fake_agent("b2")], warm_up=lambda: ran.append("sync")),
            Pack(name="idle", agents=[fake_agent("c")], warm_up=lambda: ran.append("idle")),
            Pack(name="none", warm_up=lambda: ran.append("no agents")),
        ],
        agents="a,b",  # CONCERTO_AGENTS: the idle pack's agent is not loaded
    )
    _warm_up(packs, tmp_path)
    # fake agents say `pack="testing"`: the pack that declared them is what counts, not the label
    assert ran == ["async", "sync"]


def test_a_warm_up_that_fails_is_logged_and_the_others_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    def broken() -> None:
        raise OSError("no disk")

    packs = Packs(
        [
            Pack(name="broken", agents=[fake_agent("a")], warm_up=broken),
            Pack(name="missing", agents=[fake_agent("b")], warm_up="concerto.nowhere:warm"),
            Pack(name="fine", agents=[fake_agent("c")], warm_up=lambda: ran.append("fine")),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="concerto.server.startup"):
        _warm_up(packs, tmp_path)
    assert ran == ["fine"]
    assert "warm-up failed: pack broken: OSError: no disk" in caplog.text
    assert (
        "warm-up failed: pack missing: PackError: warm_up of pack missing: cannot import concerto.nowhere"
        in caplog.text
    )
