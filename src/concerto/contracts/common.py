"""Shared vocabulary of the contracts: execution status and the error an agent reports."""

from __future__ import annotations

from datetime import date, datetime, time
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from concerto.redact import scrub, scrub_data

# Agent names are open: packs and plugins add agents, so a name is a string checked
# against the registry at plan time rather than a closed enum as in 001_*.txt.
AgentName = str


class ExecutionStatus(StrEnum):
    """Outcome of one dispatched agent task, or of the whole query."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


class ErrorKind(StrEnum):
    """Failure kinds an `AgentDispatchRequest.fallback_on` list can name."""

    TIMEOUT = "timeout"
    ERROR = "error"
    VALIDATION = "validation"
    UNAVAILABLE = "unavailable"
    NOT_FOUND = "not_found"
    CANCELLED = "cancelled"
    DEPENDENCY = "dependency"


class AgentError(BaseModel):
    """One error reported by (or about) an agent.

    `error_type` is the pack's own vocabulary (e.g. `metric_not_found`,
    `invalid_format`); `kind` is the coarse class the executor uses for fallbacks.
    `details` is for logs and is never rendered to a user. Message, suggestion and details
    are scrubbed (`concerto.redact`): an error that quotes a URL with its password, from an
    agent or a library, does not show it.
    """

    model_config = ConfigDict(extra="forbid")

    agent: AgentName
    kind: ErrorKind = ErrorKind.ERROR
    error_type: str = "error"
    message: str
    suggestion: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    recoverable: bool = False

    @field_validator("message", "suggestion")
    @classmethod
    def _scrub_text(cls, value: str | None) -> str | None:
        return scrub(value) if value else value

    @field_validator("details")
    @classmethod
    def _scrub_details(cls, value: dict[str, Any]) -> dict[str, Any]:
        scrubbed: dict[str, Any] = scrub_data(value)
        return scrubbed


def answer_value(value: Any) -> str | int | float:
    """One value of an answer as a program reads it (issue 28's `answer_values`): numbers as
    numbers (numpy's and Decimal's too), dates as `YYYY-MM-DD` (a time of day is kept only when
    it is not midnight), yes/no for a truth value, anything else as its text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return value
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    item = getattr(value, "item", None)  # a numpy scalar
    if callable(item):
        return answer_value(item())
    return str(value)


def _answer_values(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise ValueError("answer_values is a list of values, or null")
    return [answer_value(v) for v in value]


AnswerValues = Annotated[
    list[str | int | float] | None,
    BeforeValidator(_answer_values),
    Field(
        description="The answer's values when the question asks for specific values (a cell, a count, a "
        "total, a name, a list of names), in the order asked: numbers as numbers, dates as YYYY-MM-DD; "
        "null when the answer is a narrative",
    ),
]
