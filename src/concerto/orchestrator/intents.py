"""The intent table: named intents mapped to dispatch requests, read from YAML files.

Packs ship their tables (`Pack.intents`; 001_*.txt's INTENT_TO_AGENTS is the commercial
pack's) and `CONCERTO_INTENTS_FILE` adds one. An intent is active only when every agent
it names is registered, so a table can ship before its agents.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from concerto.contracts.dispatch import AgentDispatchRequest
from concerto.contracts.plan import AgentTask


class IntentSpec(BaseModel):
    """One named intent: what it means (for routing) and the requests it dispatches."""

    name: str
    description: str = ""
    examples: list[str] = []
    tasks: list[AgentDispatchRequest] = Field(..., min_length=1)

    @property
    def agents(self) -> set[str]:
        return {t.agent for t in self.tasks} | {t.fallback_agent for t in self.tasks if t.fallback_agent}

    def to_tasks(self, request: str) -> list[AgentTask]:
        """Tasks with dependencies derived from priority and parallel groups.

        A task with `wait_for_group` waits for every parallel group all of whose members
        have a higher priority (a smaller number) than its own; tasks of one group run
        together. So 001's `comprehensive_analysis` runs causal_impact and gap_analyzer
        together, then explainer, and `system_health` runs both of its agents at once.
        """
        tasks = [
            AgentTask(**req.model_dump(), task_id=f"{self.name}-{i + 1}-{req.agent}", request=request)
            for i, req in enumerate(self.tasks)
        ]
        groups: dict[int, list[AgentTask]] = {}
        for task in tasks:
            if task.parallel_group is not None:
                groups.setdefault(task.parallel_group, []).append(task)
        for task in tasks:
            if not task.wait_for_group:
                continue
            for gid, members in groups.items():
                if gid != task.parallel_group and all(m.priority < task.priority for m in members):
                    task.depends_on.extend(m.task_id for m in members if m.task_id not in task.depends_on)
        return tasks


class IntentTableError(ValueError):
    """An intent file that is not valid YAML or not the expected shape."""


def load_intent_file(path: Path) -> list[IntentSpec]:
    """Read `intents: {name: {description, examples, tasks: [...]}}` from a YAML file."""
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise IntentTableError(f"cannot read intent table {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("intents"), dict):
        raise IntentTableError(f"{path}: expected a mapping with the key 'intents'")
    specs = []
    for name, body in data["intents"].items():
        try:
            specs.append(IntentSpec(name=name, **(body or {})))
        except (ValidationError, TypeError) as exc:
            raise IntentTableError(f"{path}: intent '{name}' is invalid: {exc}") from None
    return specs


def load_intents(known_agents: set[str], files: Iterable[Path]) -> dict[str, IntentSpec]:
    """Active intents of the tables in `files`, in order (a later intent of the same name wins)."""
    table: dict[str, IntentSpec] = {}
    for path in files:
        for spec in load_intent_file(path):
            if spec.agents <= known_agents:
                table[spec.name] = spec
    return table
