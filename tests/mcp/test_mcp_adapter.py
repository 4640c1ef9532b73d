"""External MCP servers listed in the servers file become agents, one per tool (the `mcp` pack)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from _services.ports import dead_url
from concerto.agents.base import AgentFailure
from concerto.agents.registry import AgentRegistry
from concerto.mcp.adapter import agent_name, discover
from concerto.mcp.settings import MCPSettings
from concerto.mcp.spec import ServersFileError, load_servers
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context, run_agent

SERVERS = Path(__file__).parent / "servers"


def servers_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mcp_servers.yaml"
    path.write_text(text, encoding="utf-8")
    return path


NOTES = f"""
servers:
  - name: notes
    command: {sys.executable}
    args: ["{SERVERS / "notes.py"}"]
  - name: offline
    url: {{offline}}
  - name: datetime            # replaces the city pack's server; adds no agents
    command: {sys.executable}
    args: ["-m", "concerto.mcp", "concerto.packs.city.servers:datetime_server"]
"""


@pytest.fixture
def notes_settings(tmp_path: Path) -> Settings:
    path = servers_file(tmp_path, NOTES.replace("{offline}", dead_url("/mcp")))
    return Settings(data_dir=tmp_path).using(MCPSettings(mcp_servers_file=path, mcp_connect_timeout_ms=20000))


async def test_tools_become_agents(notes_settings: Settings) -> None:
    agents = await discover(notes_settings)
    by_name = {cls.info.name: cls for cls in agents}
    assert sorted(by_name) == ["notes_add_note", "notes_count_words"]
    registry = AgentRegistry(agents)  # valid names, no clash
    count = registry.get("notes_count_words").info
    assert count.description == "Count the words in a piece of text."
    assert count.inputs == {"text": "string, required"}
    assert count.pack == "mcp:notes"
    add = by_name["notes_add_note"].info
    assert add.inputs["title"].startswith("string, required") and "pinned" in add.inputs


async def test_tool_agent_runs_the_tool(notes_settings: Settings) -> None:
    agents = {cls.info.name: cls for cls in await discover(notes_settings)}
    resources = Resources(notes_settings)
    try:
        count = agents["notes_count_words"](notes_settings, resources)
        question = "one two three four"
        ctx = make_context(question, settings=notes_settings, resources=resources)
        result = await run_agent(count, ctx, question)
        assert result.output == {"words": 4}

        add = agents["notes_add_note"](notes_settings, resources)
        question = 'add a note title="Groceries" body="milk, eggs" pinned=true'
        ctx = make_context(question, settings=notes_settings, resources=resources)
        result = await run_agent(add, ctx, question)
        assert result.summary == "saved note 'Groceries' (10 chars, pinned=True)"

        with pytest.raises(AgentFailure, match="needs the inputs title, body"):
            await add.prepare("add a note about milk", ctx)
    finally:
        await resources.aclose()


async def test_no_servers_file_means_no_agents(tmp_path: Path) -> None:
    assert await discover(Settings(data_dir=tmp_path)) == []


@pytest.mark.parametrize(
    ("server", "tool", "name"),
    [
        ("notes", "countWords", "notes_count_words"),
        ("My Server", "add-note", "my_server_add_note"),
        ("1st", "GetHTTPStatus", "mcp_1st_get_httpstatus"),
        ("fs", "read.file", "fs_read_file"),
    ],
)
def test_agent_names(server: str, tool: str, name: str) -> None:
    assert agent_name(server, tool) == name


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("- name: x\n", "exactly one of `command` or `url`"),
        ("- name: x\n  command: a\n  url: http://h/mcp\n", "exactly one of"),
        ("- name: x\n  command: a\n- name: x\n  command: b\n", "repeated: x"),
        ("servers: 3\n", "expected a list of servers"),
        ("- name: x\n  comand: a\n", "comand"),
        ("[unclosed\n", "not valid YAML"),
    ],
)
def test_bad_servers_files(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ServersFileError, match=error):
        load_servers(servers_file(tmp_path, text))


def test_mcp_servers_map_form(tmp_path: Path) -> None:
    text = "mcpServers:\n  notes:\n    command: python\n    args: [notes.py]\n    type: stdio\n"
    [spec] = load_servers(servers_file(tmp_path, text))
    assert (spec.name, spec.command, spec.args) == ("notes", "python", ["notes.py"])


def test_missing_servers_file(tmp_path: Path) -> None:
    with pytest.raises(ServersFileError, match="cannot read the MCP servers file"):
        load_servers(tmp_path / "nope.yaml")
