"""Runs and conversations that outlive the process serving a request: two apps (each with its
own orchestrator and runs, as two processes have) sharing one data dir; a run followed from
the app that did not start it, a stale run reported failed, a conversation carried across
apps, and readiness. `test_stateless_processes.py` does the same with real processes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from _services.ports import dead_url
from _services.ray import RayCluster
from _services.sse import read_stream
from concerto.agents.base import AgentContext
from concerto.agents.loader import load_registry
from concerto.agents.registry import AgentRegistry
from concerto.orchestrator.engine import Orchestrator
from concerto.server.app import create_app
from concerto.server.log import ServerLog, StoredRun
from concerto.settings import Settings
from concerto.testing import fake_agent

Serve = Callable[..., TestClient]
seen: list[list[dict[str, Any]] | None] = []  # the conversation_history each `recorder` run saw


def _record(context: AgentContext, payload: dict[str, Any]) -> None:
    seen.append(context.query.conversation_history)


def registry() -> AgentRegistry:
    return AgentRegistry(
        [
            load_registry("echo").get("echo"),
            fake_agent(
                "slow", delay_s=0.5, output={"done": True}, description="Thinks slowly", examples=["think slowly"]
            ),
            fake_agent(
                "recorder",
                description="Remembers what was said before",
                examples=["what did I say before"],
                summary="noted",
                on_run=_record,
            ),
        ]
    )


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """`serve(**settings)`: an app of its own (own orchestrator, own runs) on the shared data dir."""
    with ExitStack() as stack:

        def make(**settings: Any) -> TestClient:
            orch = Orchestrator(Settings(**{"data_dir": tmp_path, **settings}), registry=registry())
            return stack.enter_context(TestClient(create_app(orchestrator=orch)))

        yield make


def test_a_run_is_followed_to_its_result_from_an_app_that_did_not_start_it(serve: Serve) -> None:
    one, other = serve(), serve()
    run = one.post("/v1/runs", json={"query": "think slowly"}).json()
    followed = read_stream(other, run["events_url"])  # live: the agent takes half a second
    kinds = [kind for kind, _, _ in followed]
    assert kinds[-1] == "result" and set(kinds[:-1]) == {"event"} and len(kinds) > 5
    ids = [int(i) for _, i, _ in followed]
    assert ids == list(range(1, len(ids) + 1))  # every event, in order, then the result's id
    assert followed[-1][2]["agents_invoked"] == ["slow"]
    assert read_stream(one, run["events_url"]) == followed  # the same as where it runs
    status = other.get(run["result_url"]).json()
    assert status["status"] == "completed" and status["events"] == len(followed) - 1
    assert status["result"] == followed[-1][2]

    cut = followed[3][1]
    assert read_stream(other, run["events_url"], **{"Last-Event-ID": cut}) == followed[4:]
    assert read_stream(other, run["events_url"] + f"?after={cut}") == followed[4:]
    with other.stream("GET", run["events_url"], headers={"Last-Event-ID": followed[-1][1]}) as response:
        assert "".join(response.iter_text()).strip() == ""  # it had everything: nothing repeats


def test_a_run_whose_process_stopped_answering_is_reported_failed(serve: Serve, tmp_path: Path) -> None:
    client = serve()
    long_ago = time.time() - 600
    stale = StoredRun(run_id="lost", query_id="lost", created=long_ago, updated=long_ago)
    ServerLog.of(Settings(data_dir=tmp_path)).save_run(stale)
    status = client.get("/v1/runs/lost").json()
    assert status["status"] == "failed"
    assert "not been heard from" in status["result"]["error_message"]
    assert status["result"]["retry_recommended"] is True
    items = read_stream(client, "/v1/runs/lost/events")  # ends at once, not followed forever
    assert [kind for kind, _, _ in items] == ["result"] and items[0][2]["status"] == "failed"


def test_a_process_that_stops_marks_its_unfinished_runs_failed(serve: Serve, tmp_path: Path) -> None:
    other = serve()
    orch = Orchestrator(Settings(data_dir=tmp_path), registry=registry())
    with TestClient(create_app(orchestrator=orch)) as one:
        run = one.post("/v1/runs", json={"query": "think slowly"}).json()
    status = other.get(run["result_url"]).json()
    assert status["status"] == "failed"
    assert "stopped before the run finished" in status["result"]["error_message"]


def test_an_unknown_run_is_still_a_404(serve: Serve) -> None:
    response = serve().get("/v1/runs/never-started")
    assert response.status_code == 404 and "no run 'never-started'" in response.json()["error_message"]


def test_a_conversation_is_carried_from_one_app_to_the_other(serve: Serve) -> None:
    one, other = serve(), serve()
    seen.clear()
    first = one.post("/v1/ask", json={"query": "echo: my name is Ada", "conversation_id": "talk-1"})
    assert first.status_code == 200
    assert other.post("/v1/ask", json={"query": "what did I say before", "conversation_id": "talk-1"}).is_success
    assert seen[-1] == [
        {"role": "user", "content": "echo: my name is Ada"},
        {"role": "assistant", "content": first.json()["response"]},
    ]
    turns = other.get("/v1/conversations/talk-1").json()["turns"]
    assert [(t["turn"], t["role"]) for t in turns] == [(1, "user"), (2, "assistant"), (3, "user"), (4, "assistant")]
    assert turns[0]["query_id"] == first.json()["query_id"]
    assert one.get("/v1/conversations/talk-1").json()["turns"] == turns

    # A history in the body wins; the turns are appended all the same.
    given = [{"role": "user", "content": "something else"}]
    body = {"query": "what did I say before", "conversation_id": "talk-1", "conversation_history": given}
    assert one.post("/v1/ask", json=body).is_success
    assert seen[-1] == given
    assert len(one.get("/v1/conversations/talk-1").json()["turns"]) == 6

    assert other.delete("/v1/conversations/talk-1").status_code == 204
    gone = one.get("/v1/conversations/talk-1")
    assert gone.status_code == 404 and gone.json()["error_message"] == "no conversation 'talk-1'"
    assert one.delete("/v1/conversations/talk-1").status_code == 404


def test_runs_and_streams_keep_the_conversation_too(serve: Serve) -> None:
    one, other = serve(), serve()
    run = one.post("/v1/runs", json={"query": "echo: first", "conversation_id": "talk-2"}).json()
    read_stream(other, run["events_url"])
    deadline = time.monotonic() + 10
    while len(other.get("/v1/conversations/talk-2").json().get("turns", [])) < 2:
        assert time.monotonic() < deadline, "the run's turns were not appended"
        time.sleep(0.05)
    with other.stream("POST", "/v1/ask/stream", json={"query": "echo: second", "conversation_id": "talk-2"}) as r:
        assert "event: result" in "".join(r.iter_text())
    turns = one.get("/v1/conversations/talk-2").json()["turns"]
    assert [t["content"] for t in turns] == ["echo: first", 'Echo: "first"', "echo: second", 'Echo: "second"']


@pytest.mark.parametrize("bad", ["has space", "a/b", "x" * 129, ""])
def test_a_conversation_id_is_a_safe_name(serve: Serve, bad: str) -> None:
    response = serve().post("/v1/ask", json={"query": "echo: hi", "conversation_id": bad})
    assert response.status_code == 422 and "conversation_id" in response.json()["error_message"]


def test_ready_once_the_router_is_loaded(serve: Serve) -> None:
    client = serve()
    deadline = time.monotonic() + 30
    while (response := client.get("/ready")).status_code != 200:
        checks = response.json()["checks"]
        assert response.status_code == 503 and not (checks["router"]["ok"] and checks["first_use"]["ok"])
        assert time.monotonic() < deadline, response.json()
        time.sleep(0.1)
    assert response.json() == {
        "ready": True,
        "checks": {
            "router": {"ok": True, "detail": None},
            "database": {"ok": True, "detail": None},
            "first_use": {"ok": True, "detail": None},
        },
    }
    assert client.get("/health").status_code == 200


def test_not_ready_when_the_database_or_the_cluster_cannot_be_reached(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONCERTO_DATABASE_URL", dead_url().replace("http://", "postgresql://postgres@") + "/db")
    client = serve(executor="ray", ray_address=dead_url().removeprefix("http://"))
    response = client.get("/ready")
    assert response.status_code == 503
    body = response.json()
    assert body["ready"] is False
    assert body["checks"]["database"]["ok"] is False and "cannot be reached" in body["checks"]["database"]["detail"]
    assert body["checks"]["cluster"]["ok"] is False and "Ray cluster" in body["checks"]["cluster"]["detail"]
    assert client.get("/health").status_code == 200  # alive all the same


def test_ready_when_the_ray_cluster_answers(serve: Serve, ray_cluster: RayCluster) -> None:
    for address in (ray_cluster.address, ""):  # its address; empty: the cluster this process joined
        response = serve(executor="ray", ray_address=address).get("/ready")
        assert response.status_code == 200, response.text
        assert response.json()["checks"]["cluster"] == {"ok": True, "detail": None}


def test_a_database_that_is_down_costs_other_processes_the_run_not_this_one(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONCERTO_DATABASE_URL", dead_url().replace("http://", "postgresql://postgres@") + "/db")
    client = serve()
    run = client.post("/v1/runs", json={"query": "echo: still here"}).json()
    assert read_stream(client, run["events_url"])[-1][2]["response"] == 'Echo: "still here"'
    down = client.get("/v1/conversations/any")
    assert down.status_code == 503
    assert down.json()["retry_recommended"] is True and "database" in down.json()["error_message"]
    refused = client.post("/v1/ask", json={"query": "echo: hi", "conversation_id": "any"})
    assert refused.status_code == 503  # no answer without the conversation it belongs to
