"""Transparency events (004_*.txt) and the query processing states (002_*.txt)."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class EventType(StrEnum):
    """What an event reports. STATE marks a transition of the query's processing state."""

    RECEIVED = "RECEIVED"
    THINKING = "THINKING"
    ACTION = "ACTION"
    RESULT = "RESULT"
    ERROR = "ERROR"
    STATE = "STATE"


class QueryState(StrEnum):
    """Query processing states of 002_*.txt, in the order a successful query passes them."""

    RECEIVED = "Received"
    ANALYZING = "Analyzing"
    PLANNED = "Planned"
    DISPATCHING = "Dispatching"
    PROCESSING = "Processing"
    AGGREGATING = "Aggregating"
    COMPLETED = "Completed"
    FAILED = "Failed"


class Event(BaseModel):
    """One step made visible: who did what, in which step, with what details."""

    query_id: str
    seq: int
    type: EventType
    title: str
    source: str = Field("orchestrator", description="orchestrator or the agent's name")
    step: int = 1
    state: QueryState | None = None
    task_id: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=time.time)
