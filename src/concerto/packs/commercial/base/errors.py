"""The agent layer's errors: a failure the user fixes by changing the question or its inputs
(`invalid`), and a method's error turned into the contract's (`failure`), so that the
statistics (`methods`) raise their own exceptions and never import the agents'."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concerto.agents.base import AgentFailure
from concerto.contracts.common import ErrorKind

if TYPE_CHECKING:
    from concerto.packs.commercial.methods.errors import MethodError


def invalid(message: str, suggestion: str, error_type: str = "invalid_input", **details: Any) -> AgentFailure:
    """A failure the user fixes by changing the question or its inputs (what to change in `suggestion`)."""
    return AgentFailure(
        message, error_type=error_type, kind=ErrorKind.VALIDATION, suggestion=suggestion, details=details
    )


def failure(exc: MethodError) -> AgentFailure:
    """The contract's error for a method's: its message, suggestion, error type and details as
    they are; a validation error when the inputs are at fault, else an error."""
    kind = ErrorKind.VALIDATION if exc.inputs_at_fault else ErrorKind.ERROR
    return AgentFailure(str(exc), error_type=exc.error_type, kind=kind, suggestion=exc.suggestion, details=exc.details)
