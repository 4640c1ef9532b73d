"""HTTP API in process (ASGI transport) and once over a real socket (uvicorn)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from concerto.agents.registry import AgentRegistry, load_registry
from concerto.orchestrator.engine import Orchestrator
from concerto.server.app import create_app
from concerto.settings import Settings
from concerto.testing import fake_agent


@pytest.fixture
def client(tmp_path: Path):  # type: ignore[no-untyped-def]
    registry = AgentRegistry(
        [
            load_registry("echo").get("echo"),
            fake_agent("hang", delay_s=30, description="Waits forever for nothing", examples=["please hang forever"]),
        ]
    )
    orch = Orchestrator(Settings(data_dir=tmp_path), registry=registry)
    with TestClient(create_app(orchestrator=orch)) as c:
        yield c


def test_ask_returns_the_output_contract(client: TestClient) -> None:
    r = client.post("/v1/ask", json={"query": "echo: hello", "output_format": "brief"})
    assert r.status_code == 200
    body = r.json()
    assert body["response"] == 'Echo: "hello"' and body["agents_invoked"] == ["echo"]
    assert body["agent_results"][0]["output"]["echo_text"] == "hello"


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        ({"query": ""}, 422),
        ({"query": "x" * 600}, 422),
        ({}, 422),
        ({"query": 12}, 422),
        ({"query": "echo: hi", "output_format": "poem"}, 422),
        ({"query": "compose a sonnet about cheese"}, 422),
    ],
)
def test_bad_requests_get_the_error_contract(client: TestClient, payload: dict, status: int) -> None:  # type: ignore[type-arg]
    r = client.post("/v1/ask", json=payload)
    assert r.status_code == status
    body = r.json()
    assert body["status"] == "failed" and body["error_message"] and body["error_category"]
    assert "Traceback" not in r.text


def test_malformed_json_body(client: TestClient) -> None:
    r = client.post("/v1/ask", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error_category"] == "invalid_input"


def test_deadline_gives_timeout_status(client: TestClient) -> None:
    r = client.post("/v1/ask", json={"query": "please hang forever", "max_latency_ms": 100})
    assert r.status_code == 504 and r.json()["error_category"] == "timeout"


def test_sse_stream_sends_events_then_result(client: TestClient) -> None:
    with client.stream("POST", "/v1/ask/stream", json={"query": "echo: streamed"}) as r:
        lines = [line for line in r.iter_lines() if line]
    kinds = [line.split(": ", 1)[1] for line in lines if line.startswith("event:")]
    assert kinds[-1] == "result" and kinds.count("event") >= 8
    data = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert data[-1]["response"] == 'Echo: "streamed"'
    assert data[0]["state"] == "Received"


def test_agents_health_openapi_page(client: TestClient) -> None:
    assert {a["name"] for a in client.get("/v1/agents").json()} == {"echo", "hang"}
    assert client.get("/health").json() == {"status": "ok", "agents": 2, "llm": False, "failed_packs": []}
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/ask", "/v1/ask/stream", "/v1/agents", "/health"} <= set(paths)
    assert "EventSource" in client.get("/").text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_real_socket_with_concerto_serve(tmp_path: Path) -> None:
    port = _free_port()
    env = {"CONCERTO_DATA_DIR": str(tmp_path), "CONCERTO_AGENTS": "echo", "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "concerto.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError(proc.stdout.read().decode() if proc.stdout else "server died") from None
                time.sleep(0.2)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/ask", json={"query": "echo: over the wire"}, timeout=10)
        assert r.status_code == 200 and r.json()["agent_results"][0]["output"]["echo_text"] == "over the wire"
        with httpx.stream("GET", f"http://127.0.0.1:{port}/v1/ask/stream", params={"q": "echo: sse"}, timeout=10) as s:
            text = "".join(s.iter_text())
        assert "event: result" in text
    finally:
        proc.terminate()
        proc.wait(10)
