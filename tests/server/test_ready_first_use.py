"""`concerto serve` prepares the agents' first-use data at start-up, in the background, and
`/ready` says so until it is done; the first question then finds it prepared."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import ClassVar

from fastapi.testclient import TestClient

from concerto.agents.base import Agent, AgentContext, AgentInfo, AgentResult, FirstUse
from concerto.agents.registry import AgentRegistry
from concerto.agents.task import TaskInput
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.orchestrator.engine import Orchestrator
from concerto.server.app import create_app
from concerto.settings import Settings

PREPARE_S = 1.5


class DemoData:
    def __init__(self) -> None:
        self.loaded = threading.Event()

    def load(self) -> None:
        time.sleep(PREPARE_S)
        self.loaded.set()


def demo_agent(demo: DemoData) -> type[Agent]:
    class Reader(Agent):
        info: ClassVar[AgentInfo] = AgentInfo(
            name="reader", description="Reads the demo data", examples=["read the demo data"], default_timeout_ms=200
        )

        def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
            return None if demo.loaded.is_set() else FirstUse("test.demo", "the test table", PREPARE_S, demo.load)

        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            return AgentResult(summary="read" if demo.loaded.is_set() else "not loaded")

    return Reader


started: list[str] = []


class Server(Agent):
    """Needs a server process of its own, started before its first question, not at start-up."""

    info: ClassVar[AgentInfo] = AgentInfo(name="pinger", description="Pings its server", examples=["ping it"])

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        return None if started else FirstUse("test.server", "the test server", 0.1, self.start, lasting=False)

    def start(self) -> None:
        started.append("server")

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        return AgentResult(summary="pong")


def test_ready_says_it_is_preparing_until_the_first_use_data_is_in(tmp_path: Path) -> None:
    demo = DemoData()
    registry = AgentRegistry([demo_agent(demo), Server])
    orch = Orchestrator(Settings(data_dir=tmp_path, store_events=False), registry=registry)
    with TestClient(create_app(orchestrator=orch)) as client:
        seen = []
        deadline = time.monotonic() + 60
        while (response := client.get("/ready")).status_code != 200:
            assert response.status_code == 503
            seen.append(response.json()["checks"]["first_use"])
            assert time.monotonic() < deadline, seen[-1]
            time.sleep(0.05)
        assert {"ok": False, "detail": "preparing the test table (first use)"} in seen
        assert response.json()["checks"]["first_use"] == {"ok": True, "detail": None}
        assert demo.loaded.is_set()  # prepared without any question
        assert started == []  # work that does not last (a server process) waits for its question
        answer = client.post("/v1/ask", json={"query": "read the demo data"}).json()
        assert answer["response"] == "read" and "first_use_ms" not in answer["breakdown"]
