"""MCP connection errors name the server without the password, key or token in its URL or command."""

from __future__ import annotations

import pytest

from _services.blackhole import blackhole
from _services.ports import dead_url
from concerto.mcp.client import MCPCallError, MCPServer
from concerto.mcp.spec import ServerSpec
from concerto.redact import scrub

PASSWORD = "s3cret-PASSWORD"


def test_where_masks_the_url_and_command_line() -> None:
    by_url = ServerSpec(name="notes", url=f"http://user:{PASSWORD}@127.0.0.1:1/mcp?token={PASSWORD}")
    assert by_url.where == "http://user:***@127.0.0.1:1/mcp?token=***"
    by_command = ServerSpec(name="notes", command="notes-server", args=[f"--api-key={PASSWORD}", "-v"])
    assert by_command.where == "notes-server --api-key=*** -v"


def test_header_and_credential_env_values_are_masked_anywhere() -> None:
    ServerSpec(
        name="notes",
        url="http://127.0.0.1:1/mcp",
        headers={"Authorization": "Bearer hdr-token-0123456789", "Accept": "application/json"},
    )
    ServerSpec(name="tool", command="tool", env={"NOTES_API_KEY": "env-key-0123456789", "HOME_DIR": "/home/me"})
    assert scrub("refused hdr-token-0123456789 and env-key-0123456789 in /home/me as application/json") == (
        "refused *** and *** in /home/me as application/json"
    )


@pytest.mark.parametrize("where", ["refused", "blackhole"])
async def test_a_connection_error_names_the_server_without_its_password(where: str) -> None:
    with blackhole() as hole:
        url = (hole.url if where == "blackhole" else dead_url()).replace("http://", f"http://user:{PASSWORD}@") + "/mcp"
        server = MCPServer(ServerSpec(name="notes", url=url), connect_timeout_s=0.5, request_timeout_s=0.5)
        try:
            with pytest.raises(MCPCallError) as caught:
                await server.session()
        finally:
            await server.aclose()
    assert PASSWORD not in caught.value.message + str(caught.value)
    assert "notes" in caught.value.message and "user:***@127.0.0.1" in caught.value.message
