"""MCP failures: a server killed mid-request, one that never answers, a tool error,
malformed tool output, a request timeout. The misbehaving servers are real MCP servers
(`mcp_servers/odd_weather.py`) or real processes that never speak MCP.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from _helpers.city import FIXTURE_SERVERS, city_settings, servers_file
from _services.ports import dead_url, free_port, wait_for_port
from concerto.agents.base import AgentFailure
from concerto.contracts.common import ErrorKind
from concerto.mcp.client import MCPServer
from concerto.packs.city.temperature import TemperatureAgent
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context, run_agent


def weather_server_settings(tmp_path: Path, path: Path, request_timeout_ms: int = 15000, **mcp: int) -> Settings:
    """Settings whose `weather` server is the one the servers file at `path` names."""
    city = {"city_request_timeout_ms": request_timeout_ms}
    return city_settings(tmp_path, dead_url(), city=city, mcp_servers_file=path, **mcp)


def odd_weather_settings(tmp_path: Path, request_timeout_ms: int = 15000) -> Settings:
    """Settings whose `weather` server is `odd_weather.py` (the servers file replaces built-ins)."""
    path = servers_file(
        tmp_path,
        f"""
servers:
  - name: weather
    command: {sys.executable}
    args: ["{FIXTURE_SERVERS / "odd_weather.py"}"]
    env:
      PID_FILE: "{tmp_path / "pid"}"
      STARTED_FILE: "{tmp_path / "started"}"
""",
    )
    return weather_server_settings(tmp_path, path, request_timeout_ms)


async def run_temperature(settings: Settings, resources: Resources, city: str) -> dict[str, object]:
    ctx = make_context("q", settings=settings, resources=resources)
    return (await run_agent(TemperatureAgent(settings, resources), ctx, inputs={"city": city})).output


async def test_server_killed_mid_request_fails_fast_then_restarts(tmp_path: Path) -> None:
    settings = odd_weather_settings(tmp_path)
    resources = Resources(settings)
    try:
        assert (await run_temperature(settings, resources, "Anytown"))["temperature"] == 55.0
        first_pid = int((tmp_path / "pid").read_text())
        call = asyncio.create_task(run_temperature(settings, resources, "Slowville"))
        for _ in range(200):
            if (tmp_path / "started").exists():
                break
            await asyncio.sleep(0.05)
        started = time.monotonic()
        os.kill(first_pid, signal.SIGKILL)
        with pytest.raises(AgentFailure) as err:
            await call
        assert time.monotonic() - started < 5  # not the 15 s request timeout
        assert err.value.kind == ErrorKind.UNAVAILABLE and err.value.error_type == "mcp_unavailable"
        assert "restarted on the next request" in err.value.message
        # The next request starts a new server process.
        assert (await run_temperature(settings, resources, "Anytown"))["temperature"] == 55.0
        assert int((tmp_path / "pid").read_text()) != first_pid
    finally:
        await resources.aclose()


async def test_server_that_never_answers_times_out_on_connect(tmp_path: Path) -> None:
    path = servers_file(
        tmp_path,
        f"""
- name: weather
  command: {sys.executable}
  args: ["-c", "import time; time.sleep(120)"]
""",
    )
    settings = weather_server_settings(tmp_path, path, mcp_connect_timeout_ms=500, mcp_startup_timeout_ms=0)
    resources = Resources(settings)
    started = time.monotonic()
    try:
        with pytest.raises(AgentFailure, match=r"did not complete the connection within 0\.5 s") as err:
            await run_temperature(settings, resources, "Boston")
        assert time.monotonic() - started < 2  # reported at the timeout, not after the clean-up
    finally:
        await resources.aclose()
    assert err.value.kind == ErrorKind.TIMEOUT and err.value.error_type == "timeout"
    assert "CONCERTO_MCP_CONNECT_TIMEOUT_MS" in err.value.message
    assert time.monotonic() - started < 6  # the timeout, then the stuck process is stopped


async def test_unreachable_http_server(tmp_path: Path) -> None:
    url = dead_url("/mcp")
    path = servers_file(tmp_path, f"- name: weather\n  url: {url}\n")
    settings = weather_server_settings(tmp_path, path, mcp_connect_timeout_ms=1500)
    resources = Resources(settings)
    try:
        with pytest.raises(AgentFailure) as err:
            await run_temperature(settings, resources, "Boston")
    finally:
        await resources.aclose()
    assert err.value.kind in (ErrorKind.UNAVAILABLE, ErrorKind.TIMEOUT)
    assert url in err.value.message


async def test_missing_command(tmp_path: Path) -> None:
    path = servers_file(tmp_path, "- name: weather\n  command: /nonexistent/mcp-server\n")
    settings = weather_server_settings(tmp_path, path)
    resources = Resources(settings)
    try:
        with pytest.raises(AgentFailure, match="Cannot connect to MCP server 'weather'") as err:
            await run_temperature(settings, resources, "Boston")
    finally:
        await resources.aclose()
    assert err.value.kind == ErrorKind.UNAVAILABLE


async def test_request_timeout(tmp_path: Path) -> None:
    settings = odd_weather_settings(tmp_path, request_timeout_ms=700)
    resources = Resources(settings)
    started = time.monotonic()
    try:
        with pytest.raises(AgentFailure, match=r"did not answer getTemperature within 0\.7 s") as err:
            await run_temperature(settings, resources, "Slowville")
        assert err.value.kind == ErrorKind.TIMEOUT
        # The session survives a slow call.
        assert (await run_temperature(settings, resources, "Anytown"))["temperature"] == 55.0
    finally:
        await resources.aclose()
    assert time.monotonic() - started < 15


async def test_tool_error_without_the_spec_shape(tmp_path: Path) -> None:
    settings = odd_weather_settings(tmp_path)
    resources = Resources(settings)
    try:
        with pytest.raises(AgentFailure, match="the thermometer broke") as err:
            await run_temperature(settings, resources, "Boom")
    finally:
        await resources.aclose()
    assert err.value.kind == ErrorKind.ERROR and err.value.details["code"] == -1


async def test_malformed_tool_output(tmp_path: Path) -> None:
    settings = odd_weather_settings(tmp_path)
    resources = Resources(settings)
    try:
        with pytest.raises(AgentFailure, match="malformed getTemperature result") as err:
            await run_temperature(settings, resources, "Malformed")
    finally:
        await resources.aclose()
    assert err.value.error_type == "malformed_response"
    assert "temperature" in err.value.message and "unit" in err.value.message


async def test_aclose_stops_the_server_process(tmp_path: Path) -> None:
    settings = odd_weather_settings(tmp_path)
    resources = Resources(settings)
    await run_temperature(settings, resources, "Anytown")
    pid = int((tmp_path / "pid").read_text())
    server = resources.get("mcp.server.weather", lambda: None)
    assert isinstance(server, MCPServer) and server.connected
    await resources.aclose()
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the MCP server process is still running after aclose()")


async def test_broken_servers_file_is_an_agent_error(tmp_path: Path) -> None:
    path = servers_file(tmp_path, "- name: weather\n")
    settings = weather_server_settings(tmp_path, path)
    resources = Resources(settings)
    try:
        with pytest.raises(AgentFailure, match="exactly one of `command` or `url`") as err:
            await run_temperature(settings, resources, "Boston")
    finally:
        await resources.aclose()
    assert err.value.error_type == "config_error"


async def test_server_that_died_while_idle_is_restarted_transparently(tmp_path: Path) -> None:
    settings = odd_weather_settings(tmp_path)
    resources = Resources(settings)
    try:
        await run_temperature(settings, resources, "Anytown")
        first_pid = int((tmp_path / "pid").read_text())
        os.kill(first_pid, signal.SIGKILL)
        await asyncio.sleep(0.3)
        assert (await run_temperature(settings, resources, "Anytown"))["temperature"] == 55.0
        assert int((tmp_path / "pid").read_text()) != first_pid
    finally:
        await resources.aclose()


async def test_http_server_killed_mid_request_fails_fast(tmp_path: Path) -> None:
    import subprocess

    port = free_port()
    env = {**os.environ, "STARTED_FILE": str(tmp_path / "started")}
    proc = subprocess.Popen(
        [sys.executable, str(FIXTURE_SERVERS / "odd_weather.py"), str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        path = servers_file(tmp_path, f"- name: weather\n  url: http://127.0.0.1:{port}/mcp\n")
        settings = weather_server_settings(tmp_path, path)
        resources = Resources(settings)
        try:
            assert (await run_temperature(settings, resources, "Anytown"))["temperature"] == 55.0
            call = asyncio.create_task(run_temperature(settings, resources, "Slowville"))
            for _ in range(200):
                if (tmp_path / "started").exists():
                    break
                await asyncio.sleep(0.05)
            started = time.monotonic()
            proc.kill()
            with pytest.raises(AgentFailure, match="closed the connection") as err:
                await call
            assert time.monotonic() - started < 5  # not the 15 s request timeout
            assert err.value.kind == ErrorKind.UNAVAILABLE
            with pytest.raises(AgentFailure, match="Cannot connect to MCP server 'weather'"):
                await run_temperature(settings, resources, "Anytown")
        finally:
            await resources.aclose()
    finally:
        proc.kill()
        proc.wait(10)
