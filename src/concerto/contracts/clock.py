"""A fixed clock in a request: `now`, the date-time every agent sees, as ISO 8601 text.

The HTTP API's bodies and query parameters (`server/routes/`) and the OpenAI-compatible
endpoint's options (`protocols/openai_chat/`) take the same field; it lives here, below both,
so neither imports the other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, Field


def iso_datetime(value: Any) -> Any:
    """ISO 8601 text only: pydantic would also read a number (or numeric text) as a Unix time."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        if isinstance(value, str):
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        pass
    raise ValueError("give the date-time as ISO 8601 text, e.g. 2025-06-15T12:00:00Z")


Now = Annotated[
    datetime | None,
    BeforeValidator(iso_datetime),
    Field(description="Fix the clock every agent sees (ISO 8601)"),
]
