"""Helpers to build an orchestrator over fake agents."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from concerto.agents.base import Agent
from concerto.agents.registry import AgentRegistry
from concerto.nlp.embeddings import LocalEmbedder
from concerto.orchestrator.engine import Orchestrator
from concerto.resources import Resources
from concerto.settings import Settings

_EMBEDDER = LocalEmbedder()  # one model load for the whole session


@pytest.fixture
def make_orchestrator(tmp_path) -> Callable[..., Orchestrator]:  # type: ignore[no-untyped-def]
    created: list[Orchestrator] = []

    def make(*agents: type[Agent], llm=None, **settings) -> Orchestrator:  # type: ignore[no-untyped-def]
        config = Settings(data_dir=tmp_path, store_events=False, **settings)
        resources = Resources(config)
        resources.put("embedder", _EMBEDDER)
        orch = Orchestrator(config, registry=AgentRegistry(agents), llm=llm, resources=resources)
        created.append(orch)
        return orch

    return make
