"""HTTP API in process (ASGI transport) and once over a real socket (uvicorn)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from _services.ports import free_port
from concerto.agents.loader import load_registry
from concerto.agents.registry import AgentRegistry
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


def test_ask_as_yaml_gives_one_handoff_document_per_agent(client: TestClient) -> None:
    from concerto.contracts.handoff import AgentToOrchestrator

    r = client.post("/v1/ask", json={"query": "echo: hello"}, headers={"accept": "application/yaml"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/yaml")
    document = AgentToOrchestrator.from_yaml(r.text)
    assert document.source_agent == "echo" and document.payload["echo_text"] == "hello"
    assert document.metadata.execution_id and document.metadata.start_time
    failed = client.post(
        "/v1/ask", json={"query": "compose a sonnet about cheese"}, headers={"accept": "application/yaml"}
    )
    assert failed.status_code == 422 and "orchestrator_error:" in failed.text and "error_category" in failed.text


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


@pytest.mark.parametrize("path", ["/v1/ask", "/v1/ask/stream"])
@pytest.mark.parametrize(
    "body",
    [b"{nope", b'{"query": "caf\xe9"}', b"\xff\xfe\x00", b"[]", b"null", b'{"query": "hi", "max_latency_ms": "5"}'],
)
def test_malformed_bodies_get_the_error_contract(client: TestClient, path: str, body: bytes) -> None:
    """Not JSON, not UTF-8, not an object, a number as text: all the error contract, never FastAPI's own shape."""
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.headers["content-type"] == "application/json"
    assert r.json()["error_category"] == "invalid_input" and "detail" not in r.json()


@pytest.mark.parametrize("path", ["/v1/ask", "/v1/ask/stream", "/v1/runs"])
@pytest.mark.parametrize("body", [b'{"query": "echo: \\ud800"}', b'{"query": "echo: hi", "source": "\\udcff"}'])
def test_a_lone_surrogate_is_refused_with_the_error_contract(client: TestClient, path: str, body: bytes) -> None:
    """JSON can escape a lone surrogate, which no UTF-8 text holds: it was a 500 on /v1/ask, a
    stream that stopped after one event and a run whose status was a 500 forever after."""
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "a lone surrogate" in r.json()["error_message"], r.text
    # A URL cannot carry one: its bytes are read as UTF-8, an unpaired surrogate's (ED A0 80) as U+FFFD.
    with client.stream("GET", "/v1/ask/stream?q=echo%3A%20%ED%A0%80") as streamed:
        assert streamed.status_code == 200 and '"echo_text":"\ufffd' in streamed.read().decode()


def test_a_source_that_is_not_loaded_is_the_callers_error(tmp_path: Path) -> None:
    """The analytics agents answer "no data source named ..." (not found): the caller's to fix,
    422 `invalid_input`, not 502 `all_agents_failed` (a backend's fault)."""
    settings = Settings(data_dir=tmp_path, store_events=False, agents="analytics")
    with TestClient(create_app(settings)) as c:
        r = c.post("/v1/ask", json={"query": "total sales by region", "source": "nope"})
    body = r.json()
    assert r.status_code == 422 and body["error_category"] == "invalid_input", r.text
    assert "no data source named 'nope'" in body["error_message"]
    assert [e["error_type"] for p in body["partial_results"] for e in p["errors"]] == ["source_not_found"]


def test_per_question_parameters_are_in_the_body(client: TestClient) -> None:
    body = {"query": "echo: hi", "source": "sales", "context": "Q3 only", "parameters": {"treatment": "samples"}}
    assert client.post("/v1/ask", json=body).status_code == 200
    bad = client.post("/v1/ask", json={"query": "echo: hi", "parameters": {"request": "override"}})
    assert bad.status_code == 422 and "set by the orchestrator" in bad.json()["error_message"]


def test_both_methods_of_the_stream_are_allowed(client: TestClient) -> None:
    r = client.request("DELETE", "/v1/ask/stream")
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST"


def test_streams_are_documented_as_event_streams(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for method in ("get", "post"):
        ok = paths["/v1/ask/stream"][method]["responses"]["200"]["content"]
        assert list(ok) == ["text/event-stream"]
        data = ok["text/event-stream"]["itemSchema"]["properties"]["data"]["contentSchema"]
        assert {r["$ref"].rsplit("/", 1)[1] for r in data["anyOf"]} == {
            "Event",
            "OrchestratorOutput",
            "OrchestratorErrorResponse",
        }
    params = {p["name"] for p in paths["/v1/ask/stream"]["get"]["parameters"]}
    assert {"q", "output_format", "user_expertise", "source", "now"} <= params  # from the input contract


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
    assert '<script type="importmap">' in client.get("/").text


def test_pack_routes_and_static_files_are_served(tmp_path: Path) -> None:
    from fastapi import APIRouter

    from concerto.agents.loader import Packs
    from concerto.agents.pack import Pack

    router = APIRouter()

    @router.get("/v1/acme/ping")
    async def ping() -> dict[str, str]:
        return {"pong": "acme"}

    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "hello.txt").write_text("hi from acme")
    packs = Packs(
        [
            Pack(name="acme", routes=[router], static={"/acme": tmp_path / "assets"}),
            Pack(name="broken", routes=["acme_nowhere:router"], static={"/gone": tmp_path / "missing"}),
        ]
    )
    orch = Orchestrator(Settings(data_dir=tmp_path), registry=AgentRegistry(), packs=packs)
    with TestClient(create_app(orchestrator=orch)) as c:
        assert c.get("/v1/acme/ping").json() == {"pong": "acme"}
        assert c.get("/acme/hello.txt").text == "hi from acme"
        failed = c.get("/health").json()["failed_packs"]
    assert {(f["pack"], f["part"]) for f in failed} == {("broken", "routes"), ("broken", "static")}


def test_real_socket_with_concerto_serve(tmp_path: Path) -> None:
    port = free_port()
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


def test_availability_says_what_to_set_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from concerto.packs.metrics.agent import MetricsAgent

    for name in ("CONCERTO_PROMETHEUS_URL", "CONCERTO_GRAFANA_URL"):
        monkeypatch.delenv(name, raising=False)
    registry = AgentRegistry([load_registry("echo").get("echo"), MetricsAgent])
    orch = Orchestrator(Settings(data_dir=tmp_path, store_events=False), registry=registry)
    with TestClient(create_app(orchestrator=orch)) as c:
        found = {a["agent"]: a for a in c.get("/v1/agents/availability").json()}
    assert found["echo"] == {"agent": "echo", "available": True, "reason": None}
    assert found["metrics_agent"]["available"] is False
    assert "CONCERTO_PROMETHEUS_URL" in found["metrics_agent"]["reason"]
