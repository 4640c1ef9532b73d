"""Concerto as an MCP server (`concerto mcp serve concerto`), tried with the official MCP client
over stdio and streamable HTTP, and checked by the protocol's conformance suite."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

from _services.mcp import SERVER_SCENARIOS, conformance_suite, run_conformance, start_http_server
from _services.ports import stop
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.data.sources import store_for
from concerto.settings import Settings

AGENTS = "echo,kpi,datetime,sql_analytics,data_discovery"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding one loaded source (numbers only: no embedding model needed)."""
    path = tmp_path_factory.mktemp("mcp-data")
    csv = path / "orders.csv"
    csv.write_text("region_id,amount\n1,10.5\n2,20\n3,7.25\n", encoding="utf-8")
    store = store_for(Settings(data_dir=path))
    store.load(csv, "orders")
    store.close()
    return path


def _env(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "CONCERTO_DATA_DIR": str(data_dir), "CONCERTO_AGENTS": AGENTS}


@asynccontextmanager
async def stdio_session(data_dir: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "concerto.cli", "mcp", "serve", "concerto"], env=_env(data_dir)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def http_url(data_dir: Path) -> Iterator[str]:
    proc, url = start_http_server("concerto", env=_env(data_dir), timeout_s=60)
    try:
        yield url
    finally:
        stop(proc)


async def test_tools_are_ask_and_one_per_agent_with_declared_inputs(data_dir: Path) -> None:
    async with stdio_session(data_dir) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {"ask", *AGENTS.split(",")}
    ask = tools["ask"].inputSchema
    assert ask["required"] == ["question"]
    assert set(ask["properties"]) == {"question", "source", "format", "expertise", "now"}
    assert ask["properties"]["format"]["enum"] == ["narrative", "structured", "brief"]
    kpi = tools["kpi"].inputSchema["properties"]
    assert {"question", "queries", "analysis"} <= set(kpi)  # its declared inputs, but not `query` (the question)
    assert "query" not in kpi and "request" not in kpi
    assert "Several agreed-format queries" in kpi["queries"]["description"]
    assert "Examples:" in (tools["kpi"].description or "")


async def test_ask_returns_the_answer_as_text_and_the_contract_as_structured_content(data_dir: Path) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with stdio_session(data_dir) as session:
        result = await session.call_tool("ask", {"question": "echo hello world"}, progress_callback=on_progress)
    assert not result.isError
    assert result.content[0].text == 'Echo: "hello world"'  # type: ignore[union-attr]
    output = OrchestratorOutput.model_validate(result.structuredContent)
    assert output.agents_invoked == ["echo"]
    assert output.agent_results[0].output["echo_text"] == "hello world"
    # the transparency events, in order, as progress notifications
    messages = [m for _, m in progress]
    assert messages[0] == "Received question"
    assert any(m and m.startswith("Intent: echo") for m in messages)
    assert [v for v, _ in progress] == sorted(v for v, _ in progress)


async def test_agent_tool_asks_that_agent_directly(data_dir: Path) -> None:
    async with stdio_session(data_dir) as session:
        result = await session.call_tool(
            "kpi", {"question": "home-loan attrition rate previous 4 months", "now": "2026-11-24T12:00:00Z"}
        )
        wrong_agent = await session.call_tool("datetime", {"question": "echo hello"})
    output = OrchestratorOutput.model_validate(result.structuredContent)
    assert output.intent_classification.classification_method == "direct"
    assert output.agents_invoked == ["kpi"]
    assert "attrition rate" in result.content[0].text.lower()  # type: ignore[union-attr]
    # a question the named agent cannot answer is its error, not a re-routing to echo
    assert wrong_agent.isError
    error = OrchestratorErrorResponse.model_validate(wrong_agent.structuredContent)
    assert error.partial_results and error.partial_results[0].agent == "datetime"


async def test_bad_input_is_a_tool_error_in_the_error_contract(data_dir: Path) -> None:
    async with stdio_session(data_dir) as session:
        empty = await session.call_tool("ask", {"question": "  "})
        long = await session.call_tool("ask", {"question": "x" * 10_000})
        clock = await session.call_tool("ask", {"question": "echo hi", "now": "yesterday-ish"})
        bad_format = await session.call_tool("ask", {"question": "echo hi", "format": "poem"})
    for result in (empty, long, clock):
        assert result.isError
        error = OrchestratorErrorResponse.model_validate(result.structuredContent)
        assert error.error_category == "invalid_input"
        assert "Traceback" not in result.content[0].text  # type: ignore[union-attr]
    assert "ISO 8601" in clock.content[0].text  # type: ignore[union-attr]
    assert bad_format.isError and "format" in bad_format.content[0].text  # type: ignore[union-attr]


async def test_examples_are_prompts_and_sources_are_resources(data_dir: Path) -> None:
    async with stdio_session(data_dir) as session:
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        first = await session.get_prompt("kpi-1")
        resources = {str(r.uri): r for r in (await session.list_resources()).resources}
        agents = await session.read_resource("concerto://agents")  # type: ignore[arg-type]
        orders = await session.read_resource("concerto://sources/orders")  # type: ignore[arg-type]
        with pytest.raises(McpError, match="no data source named 'nowhere'"):
            await session.read_resource("concerto://sources/nowhere")  # type: ignore[arg-type]
    assert "kpi-1" in prompts and prompts["kpi-1"].arguments == []
    assert first.messages[0].role == "user"
    assert first.messages[0].content.text == prompts["kpi-1"].description  # type: ignore[union-attr]
    assert set(resources) == {"concerto://agents", "concerto://sources/orders"}
    assert resources["concerto://sources/orders"].description.startswith("3 rows")  # type: ignore[union-attr]
    assert '"name": "echo"' in agents.contents[0].text  # type: ignore[union-attr]
    assert '"row_count": 3' in orders.contents[0].text  # type: ignore[union-attr]


async def test_streamable_http_answers_and_reports_progress(http_url: str) -> None:
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with streamablehttp_client(http_url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        first = await session.call_tool("ask", {"question": "echo over http"}, progress_callback=on_progress)
        second = await session.call_tool("echo", {"question": "echo again", "text": "again"})
    assert first.content[0].text == 'Echo: "over http"'  # type: ignore[union-attr]
    assert "Received question" in progress
    assert OrchestratorOutput.model_validate(second.structuredContent).agents_invoked == ["echo"]


@pytest.fixture(scope="module")
def conformance() -> tuple[Path, dict[str, str]]:
    return conformance_suite()


@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_conformance(conformance: tuple[Path, dict[str, str]], http_url: str, scenario: str) -> None:
    run_conformance(conformance, http_url, scenario)
