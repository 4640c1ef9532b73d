"""Concerto: a multi-agent orchestrator for plain-language questions about data and systems.

The public API is what `__all__` lists; modules are implementation detail. In async code:
`async with concerto.Orchestrator() as o: await o.ask("...")`; elsewhere (a script, a
notebook): `concerto.ask("...")`. See docs/python-api.md. Names load on
first use (PEP 562), so `import concerto.packs.city.servers` in an MCP server process or
the CLI's start-up does not pay for the engine, numpy and FastAPI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult
    from concerto.agents.loader import load_registry
    from concerto.agents.pack import Pack
    from concerto.agents.registry import AgentRegistry, register_agent
    from concerto.agents.task import PriorResult, TaskInput
    from concerto.api import ask
    from concerto.contracts.common import AgentError, ErrorKind, ExecutionStatus
    from concerto.contracts.dispatch import AgentDispatchRequest, AgentDispatchResponse
    from concerto.contracts.events import Event, EventType, QueryState
    from concerto.contracts.orchestrator import (
        IntentClassification,
        OrchestratorErrorResponse,
        OrchestratorInput,
        OrchestratorOutput,
    )
    from concerto.contracts.plan import AgentTask, OrchestrationPlan
    from concerto.orchestrator.engine import Orchestrator
    from concerto.settings import PackSettings, Settings

_WHERE = {
    "Agent": "concerto.agents.base",
    "AgentContext": "concerto.agents.base",
    "AgentDispatchRequest": "concerto.contracts.dispatch",
    "AgentDispatchResponse": "concerto.contracts.dispatch",
    "AgentError": "concerto.contracts.common",
    "AgentFailure": "concerto.agents.base",
    "AgentInfo": "concerto.agents.base",
    "AgentRegistry": "concerto.agents.registry",
    "AgentResult": "concerto.agents.base",
    "AgentTask": "concerto.contracts.plan",
    "ErrorKind": "concerto.contracts.common",
    "Event": "concerto.contracts.events",
    "EventType": "concerto.contracts.events",
    "ExecutionStatus": "concerto.contracts.common",
    "IntentClassification": "concerto.contracts.orchestrator",
    "OrchestrationPlan": "concerto.contracts.plan",
    "Orchestrator": "concerto.orchestrator.engine",
    "Pack": "concerto.agents.pack",
    "PriorResult": "concerto.agents.task",
    "PackSettings": "concerto.settings",
    "OrchestratorErrorResponse": "concerto.contracts.orchestrator",
    "OrchestratorInput": "concerto.contracts.orchestrator",
    "OrchestratorOutput": "concerto.contracts.orchestrator",
    "QueryState": "concerto.contracts.events",
    "Settings": "concerto.settings",
    "TaskInput": "concerto.agents.task",
    "ask": "concerto.api",
    "load_registry": "concerto.agents.loader",
    "register_agent": "concerto.agents.registry",
}

__all__ = [
    "Agent",
    "AgentContext",
    "AgentDispatchRequest",
    "AgentDispatchResponse",
    "AgentError",
    "AgentFailure",
    "AgentInfo",
    "AgentRegistry",
    "AgentResult",
    "AgentTask",
    "ErrorKind",
    "Event",
    "EventType",
    "ExecutionStatus",
    "IntentClassification",
    "OrchestrationPlan",
    "Orchestrator",
    "OrchestratorErrorResponse",
    "OrchestratorInput",
    "OrchestratorOutput",
    "Pack",
    "PackSettings",
    "PriorResult",
    "QueryState",
    "Settings",
    "TaskInput",
    "ask",
    "load_registry",
    "register_agent",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'concerto' has no attribute '{name}'")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
