"""Runs: a question started once, followed by readers that may drop and resume with
Last-Event-ID without losing or repeating an event; the run goes on without readers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from _services.sse import read_stream
from concerto.agents.loader import load_registry
from concerto.agents.registry import AgentRegistry
from concerto.orchestrator.engine import Orchestrator
from concerto.server.app import create_app
from concerto.settings import Settings
from concerto.testing import fake_agent


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    registry = AgentRegistry(
        [
            load_registry("echo").get("echo"),
            fake_agent(
                "slow", delay_s=0.6, output={"done": True}, description="Thinks slowly", examples=["think slowly"]
            ),
        ]
    )
    orch = Orchestrator(Settings(data_dir=tmp_path, store_events=False), registry=registry)
    with TestClient(create_app(orchestrator=orch)) as c:
        yield c


def test_a_run_streams_its_events_then_its_result(client: TestClient) -> None:
    started = client.post("/v1/runs", json={"query": "echo: hi"})
    assert started.status_code == 202
    run = started.json()
    items = read_stream(client, run["events_url"])
    kinds = [kind for kind, _, _ in items]
    assert kinds[-1] == "result" and set(kinds[:-1]) == {"event"}
    ids = [int(i) for _, i, _ in items]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    result = items[-1][2]
    assert result["response"] == 'Echo: "hi"'
    status = client.get(run["result_url"]).json()
    assert status["status"] == "completed" and status["result"] == result and status["events"] == len(items) - 1


def test_a_reader_resumes_after_the_last_event_it_saw(client: TestClient) -> None:
    run = client.post("/v1/runs", json={"query": "echo: hi"}).json()
    everything = read_stream(client, run["events_url"])
    cut = everything[4][1]
    resumed = read_stream(client, run["events_url"], **{"Last-Event-ID": cut})
    assert resumed == everything[5:]
    assert read_stream(client, run["events_url"] + f"?after={cut}") == everything[5:]
    last = everything[-1][1]
    with client.stream("GET", run["events_url"], headers={"Last-Event-ID": last}) as response:
        assert "".join(response.iter_text()).strip() == ""  # it had everything: nothing repeats
    # ids the log cannot hold (64-bit): the header is read as the largest, the query refused (was a 500)
    with client.stream("GET", run["events_url"], headers={"Last-Event-ID": "9" * 30}) as response:
        assert response.status_code == 200 and "".join(response.iter_text()).strip() == ""
    assert read_stream(client, run["events_url"], **{"Last-Event-ID": "-3"}) == everything
    assert client.get(run["events_url"] + "?after=9223372036854775808").status_code == 422


def test_the_run_goes_on_when_its_reader_leaves(client: TestClient) -> None:
    run = client.post("/v1/runs", json={"query": "think slowly"}).json()
    with client.stream("GET", run["events_url"]) as response:
        for line in response.iter_lines():
            if line.startswith("id:"):
                break  # one event, then the reader goes away
    deadline = time.monotonic() + 10
    while client.get(run["result_url"]).json()["status"] == "running":
        assert time.monotonic() < deadline, "the run stopped with its reader"
        time.sleep(0.1)
    status = client.get(run["result_url"]).json()
    assert status["status"] == "completed" and status["result"]["agents_invoked"] == ["slow"]
    assert read_stream(client, run["events_url"])[-1][0] == "result"  # a later reader still gets it all


@pytest.mark.parametrize("path", ["/v1/runs/nope", "/v1/runs/nope/events"])
def test_an_unknown_run_is_a_404_in_the_error_contract(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    body = response.json()
    assert body["status"] == "failed" and "no run 'nope'" in body["error_message"]


def test_a_bad_question_is_refused_before_a_run_starts(client: TestClient) -> None:
    response = client.post("/v1/runs", json={"query": ""})
    assert response.status_code == 422 and response.json()["error_category"] == "invalid_input"


def test_a_question_the_engine_refuses_finishes_its_run_as_failed(client: TestClient) -> None:
    run = client.post("/v1/runs", json={"query": "compose a sonnet about cheese"}).json()
    items = read_stream(client, run["events_url"])
    assert items[-1][0] == "result" and items[-1][2]["status"] == "failed"
    assert client.get(run["result_url"]).json()["status"] == "failed"


def test_the_events_endpoint_is_documented_as_an_event_stream(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    content = spec["paths"]["/v1/runs/{run_id}/events"]["get"]["responses"]["200"]["content"]
    assert "text/event-stream" in content
    assert spec["paths"]["/v1/runs"]["post"]["responses"]["202"]


async def test_finished_runs_beyond_the_limit_are_forgotten(tmp_path: Path) -> None:
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.server.runs import Runs, UnknownRun

    orch = Orchestrator(
        Settings(data_dir=tmp_path, store_events=False), registry=AgentRegistry([load_registry("echo").get("echo")])
    )
    runs = Runs(orch, keep=2)
    started = [runs.start(OrchestratorInput(query=f"echo: {i}")) for i in range(3)]
    for run in started:
        assert run.task is not None
        await run.task
    runs.start(OrchestratorInput(query="echo: 4"))
    with pytest.raises(UnknownRun):
        runs.get(started[0].run_id)
    assert runs.get(started[2].run_id).status == "completed"
    await runs.aclose()
    await orch.aclose()
