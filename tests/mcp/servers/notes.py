"""A small third-party MCP server whose tools should become agents (external MCP servers test)."""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP

server = FastMCP(name="notes", log_level="WARNING")


@server.tool(name="countWords")
def count_words(text: str) -> dict[str, Any]:
    """Count the words in a piece of text."""
    return {"words": len(text.split())}


@server.tool(name="add-note")
def add_note(title: str, body: str, pinned: bool = False) -> str:
    """Save a note with a title and a body."""
    return f"saved note '{title}' ({len(body)} chars, pinned={pinned})"


if __name__ == "__main__":
    server.run("stdio")
