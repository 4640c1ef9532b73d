"""The error body MCP tools of Concerto send, and how a client reads it back.

002_*.txt gives every tool failure the shape `{"error": {"code", "message", "data"}}`.
A server raises `tool_error(...)` (the SDK's `ToolError` carrying that JSON as its text),
so any MCP client shows a message a user can act on; Concerto's client reads the code
back with `parse_tool_error`, and gives other servers' plain texts the code -1.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

_ERROR_JSON = re.compile(r"\{.*\}", re.S)


class MCPError(BaseModel):
    """Error body of a tool (002_*.txt `MCPError`), with optional data such as choices for the user."""

    code: int
    message: str
    data: dict[str, Any] | None = None


def tool_error(code: int, message: str, data: dict[str, Any] | None = None) -> Exception:
    """A `ToolError` whose text is the `MCPError` as JSON; raise it from a tool."""
    from mcp.server.fastmcp.exceptions import ToolError

    body = MCPError(code=code, message=message, data=data).model_dump(exclude_none=True)
    return ToolError(json.dumps({"error": body}, ensure_ascii=False))


def parse_tool_error(text: str) -> MCPError:
    """Read the `MCPError` back from a tool error's text; other servers' texts get code -1."""
    m = _ERROR_JSON.search(text)
    if m:
        try:
            body = json.loads(m.group(0))
            return MCPError.model_validate(body.get("error", body))
        except ValueError:
            pass
    return MCPError(code=-1, message=text.strip() or "the tool failed without a message")
