"""The commercial agents on the built-in data set in a temporary DuckDB data dir: `run_agent`
calls one agent's `run` as the executor would (its `TaskInput` and context), without routing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _helpers.commercial import NOW
from concerto.agents.base import Agent, AgentContext, AgentResult
from concerto.agents.task import TaskInput
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.data.sources import store_for
from concerto.data.store import Store
from concerto.resources import Resources
from concerto.settings import Settings


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(data_dir=tmp_path_factory.mktemp("commercial"), store_events=False)


@pytest.fixture(scope="session")
def resources(settings: Settings) -> Iterator[Resources]:
    yield Resources(settings)


@pytest.fixture(scope="session")
def store(settings: Settings, resources: Resources) -> Store:
    return store_for(settings, resources)


@pytest.fixture
def run_agent(settings: Settings, resources: Resources) -> Any:
    """`await run_agent(AgentClass, "question", **inputs)` → AgentResult; `query_fields`
    (brand, user_expertise, output_format, source) go to the OrchestratorInput, `inputs` to the
    task as a plan task's input would (`source=` included)."""

    async def run(
        cls: type[Agent], question: str, *, query_fields: dict[str, Any] | None = None, **inputs: Any
    ) -> AgentResult:
        agent = cls(settings, resources)
        query = OrchestratorInput(query=question, **(query_fields or {}))
        context = AgentContext(query=query, now=NOW, settings=settings, resources=resources, agent=cls.info.name)
        return await agent.run(context, TaskInput.build(query, task_input=inputs))

    return run
