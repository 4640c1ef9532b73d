"""Two `concerto serve` processes behind a round-robin proxy (a few lines of ASGI in this file,
served by uvicorn) serve one event stream, one conversation and the same A2A tasks: sharing
one data dir (SQLite), and, with separate data dirs, one PostgreSQL database.

Round robin makes every request go to the other process than the one before, and the proxy
says which one answered (`x-upstream`), so the tests check that a run started on one is
followed from the other. Besides echo, the processes load a small plugin pack whose agent
takes a second and reports progress, so the other process follows a run that is still going.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn

from _services.ports import free_port, wait_for_http
from _services.ports import stop as stop_process
from _services.postgres import Postgres

SLOW_PACK = """
import asyncio

from concerto import Agent, AgentInfo, AgentResult, Pack
from concerto.contracts.events import EventType


class Slow(Agent):
    info = AgentInfo(name="slow", description="Counts slowly to five.", examples=["slowly: count"])

    def match_structured(self, text):
        return {} if text.startswith("slowly:") else None

    async def run(self, context, task):
        for i in range(1, 6):
            await asyncio.sleep(0.2)
            await context.emit(EventType.ACTION, f"counted {i}", {"i": i})
        return AgentResult(summary="counted to five", output={"counted": 5})


pack = Pack(name="slow", agents=[Slow])
"""
HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"host"}


class RoundRobin:
    """A reverse proxy: each request to the next upstream, its response streamed back (server-sent
    events as they come) with the upstream's index in `x-upstream`."""

    def __init__(self, upstreams: list[str]) -> None:
        self.upstreams = upstreams
        self.turn = itertools.count()
        self.client: httpx.AsyncClient | None = None

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.client = httpx.AsyncClient(timeout=httpx.Timeout(60.0))
                    await send({"type": "lifespan.startup.complete"})
                else:
                    if self.client is not None:
                        await self.client.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        assert scope["type"] == "http" and self.client is not None
        index = next(self.turn) % len(self.upstreams)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        url = self.upstreams[index] + scope["raw_path"].decode()
        if scope["query_string"]:
            url += "?" + scope["query_string"].decode()
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        request = self.client.build_request(scope["method"], url, headers=headers, content=body)
        response = await self.client.send(request, stream=True)
        try:
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]
            out.append((b"x-upstream", b"%d" % index))
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


def run_proxy(upstreams: list[str]) -> tuple[str, Callable[[], None]]:
    """The proxy on a free loopback port, in a thread; returns its URL and how to stop it."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(RoundRobin(upstreams), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="proxy", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(10)

    return f"http://127.0.0.1:{port}", stop


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A folder holding the slow pack as an installed plugin (module + dist-info entry point)."""
    root = tmp_path / "plugins"
    root.mkdir()
    (root / "slow_pack.py").write_text(SLOW_PACK, encoding="utf-8")
    dist = root / "slow_pack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: slow-pack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[concerto.agents]\nslow = slow_pack:pack\n")
    return root


@pytest.fixture
def cluster(plugin_path: Path) -> Iterator[Callable[..., str]]:
    """`cluster(data_dirs, **env)`: one `concerto serve` per data dir (same dir twice: shared), ready,
    behind the proxy; returns the proxy's URL. Everything stops after the test."""
    procs: list[subprocess.Popen[bytes]] = []
    stops: list[Callable[[], None]] = []

    def start(data_dirs: list[Path], **extra: str) -> str:
        urls = []
        for data_dir in data_dirs:
            port = free_port()
            env = {
                **os.environ,
                "CONCERTO_DATA_DIR": str(data_dir),
                "CONCERTO_AGENTS": "echo,slow",
                "PYTHONPATH": os.pathsep.join([str(plugin_path), *sys.path]),
                **extra,
            }
            command = [sys.executable, "-m", "concerto.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            urls.append(f"http://127.0.0.1:{port}")
        for url, proc in zip(urls, procs[-len(urls) :], strict=True):
            wait_for_http(f"{url}/health", proc, timeout_s=60)
            wait_for_http(f"{url}/ready", proc, timeout_s=60)
        url, stop = run_proxy(urls)
        stops.append(stop)
        return url

    yield start
    for stop in stops:
        stop()
    for proc in procs:
        stop_process(proc)


def read_stream(client: httpx.Client, url: str, **headers: str) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    """Which upstream answered, and (event, id, data) of every item of the stream, to its end."""
    with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())
        upstream = response.headers["x-upstream"]
    items = []
    for block in text.strip().split("\n\n"):
        if block:
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            items.append((fields["event"], fields["id"], json.loads(fields["data"])))
    return upstream, items


def serves_one_run_and_one_conversation(proxy: str) -> None:
    with httpx.Client(base_url=proxy, timeout=60) as client:
        for _ in range(2):  # both processes are ready
            assert client.get("/ready").json()["ready"] is True

        started = client.post("/v1/runs", json={"query": "slowly: count"})
        assert started.status_code == 202
        run = started.json()
        upstream, items = read_stream(client, run["events_url"])
        assert upstream != started.headers["x-upstream"]  # followed from the other process, live
        kinds = [kind for kind, _, _ in items]
        assert kinds[-1] == "result" and set(kinds[:-1]) == {"event"}
        ids = [int(i) for _, i, _ in items]
        assert ids == list(range(1, len(ids) + 1))  # complete and in order
        counted = [d["title"] for k, _, d in items if k == "event" and d["title"].startswith("counted")]
        assert counted == [f"counted {i}" for i in range(1, 6)]
        assert items[-1][2]["agents_invoked"] == ["slow"]

        # Resuming after Last-Event-ID, on each process in turn, gives exactly what was missed.
        cut = items[4][1]
        for _ in range(2):
            _, resumed = read_stream(client, run["events_url"], **{"Last-Event-ID": cut})
            assert resumed == items[5:]
        for _ in range(2):
            status = client.get(run["result_url"]).json()
            assert status["status"] == "completed" and status["result"] == items[-1][2]

        # One conversation, asked through both processes, keeps every turn in order.
        answers = []
        for i in range(4):
            reply = client.post("/v1/ask", json={"query": f"echo hello {i}", "conversation_id": "shared-talk"})
            assert reply.status_code == 200, reply.text
            answers.append(reply.headers["x-upstream"])
        assert set(answers) == {"0", "1"}
        for _ in range(2):
            turns = client.get("/v1/conversations/shared-talk").json()["turns"]
            assert [t["turn"] for t in turns] == list(range(1, 9))
            assert [t["content"] for t in turns if t["role"] == "user"] == [f"echo hello {i}" for i in range(4)]
        assert client.delete("/v1/conversations/shared-talk").status_code == 204
        assert client.get("/v1/conversations/shared-talk").status_code == 404


def a2a(client: httpx.Client, method: str, **params: Any) -> tuple[str, dict[str, Any]]:
    """One JSON-RPC call to the A2A endpoint: which upstream answered, and its result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = client.post("/a2a", json=body, headers={"A2A-Version": "1.0"})
    assert response.status_code == 200 and "result" in response.json(), response.text
    return response.headers["x-upstream"], response.json()["result"]


def a2a_stream(client: httpx.Client, method: str, **params: Any) -> tuple[str, list[dict[str, Any]]]:
    """A streaming JSON-RPC call, read to its end: which upstream answered, and each result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    with client.stream("POST", "/a2a", json=body, headers={"A2A-Version": "1.0"}) as response:
        assert response.headers["content-type"].startswith("text/event-stream"), response.read()
        text = "".join(response.iter_text())
        upstream = response.headers["x-upstream"]
    data = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    return upstream, [json.loads(d)["result"] for d in data]


def message(text: str) -> dict[str, Any]:
    return {"messageId": f"m-{time.monotonic_ns()}", "role": "ROLE_USER", "parts": [{"text": text}]}


def serves_a2a_tasks(proxy: str) -> None:
    """A2A tasks started on one process are followed, read, listed and cancelled on the other."""
    with httpx.Client(base_url=proxy, timeout=60) as client:
        started_on, task = a2a(
            client, "SendMessage", message=message("slowly: count"), configuration={"returnImmediately": True}
        )
        assert task["task"]["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
        task_id, context_id = task["task"]["id"], task["task"]["contextId"]

        # Subscribed to from the other process while it runs: the rest of its steps, then the answer.
        followed_on, items = a2a_stream(client, "SubscribeToTask", id=task_id)
        assert followed_on != started_on
        assert items[0]["task"]["id"] == task_id  # the snapshot first, as the protocol says
        updates = [i["statusUpdate"]["status"] for i in items if "statusUpdate" in i]
        steps = [u["message"]["parts"][0]["text"] for u in updates if "message" in u]
        assert "slow: counted 5" in steps
        assert items[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        (artifact,) = [i["artifactUpdate"]["artifact"] for i in items if "artifactUpdate" in i]
        assert artifact["parts"][0]["text"] == "counted to five"

        for _ in range(2):  # read on both processes
            _, done = a2a(client, "GetTask", id=task_id)
            assert done["status"]["state"] == "TASK_STATE_COMPLETED" and done["artifacts"][0]["name"] == "answer"

        # A second question of the same context, through the other process; both list the two.
        _, second = a2a(client, "SendMessage", message={**message("echo again"), "contextId": context_id})
        assert second["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        for _ in range(2):
            _, listed = a2a(client, "ListTasks", contextId=context_id)
            assert {t["id"] for t in listed["tasks"]} == {task_id, second["task"]["id"]}

        # Cancelled on the process that is not running it: the task stays cancelled, with no answer.
        started_on, slow = a2a(
            client, "SendMessage", message=message("slowly: count"), configuration={"returnImmediately": True}
        )
        cancelled_on, cancelled = a2a(client, "CancelTask", id=slow["task"]["id"])
        assert cancelled_on != started_on and cancelled["status"]["state"] == "TASK_STATE_CANCELED"
        time.sleep(1.5)  # longer than the agent takes: had it not stopped, it would have answered
        for _ in range(2):
            _, after = a2a(client, "GetTask", id=slow["task"]["id"])
            assert after["status"]["state"] == "TASK_STATE_CANCELED" and not after.get("artifacts")


def test_two_processes_sharing_one_data_dir(cluster: Callable[..., str], tmp_path: Path) -> None:
    shared = tmp_path / "data"
    proxy = cluster([shared, shared])
    serves_one_run_and_one_conversation(proxy)
    serves_a2a_tasks(proxy)


def test_two_processes_sharing_one_postgresql_database(
    cluster: Callable[..., str], tmp_path: Path, postgres: Postgres
) -> None:
    name = f"stateless_{int(time.time() * 1000)}"
    postgres.psql(f"CREATE DATABASE {name}")
    url = postgres.url.rsplit("/", 1)[0] + f"/{name}"
    proxy = cluster([tmp_path / "one", tmp_path / "two"], CONCERTO_DATABASE_URL=url)
    serves_one_run_and_one_conversation(proxy)
    serves_a2a_tasks(proxy)
    with psycopg.connect(url) as con:  # the runs, events, turns and A2A tasks are in the database
        counts = con.execute(
            "SELECT (SELECT count(*) FROM concerto_log.runs), (SELECT count(*) FROM concerto_log.events), "
            "(SELECT count(*) FROM concerto_log.a2a_tasks)"
        ).fetchone()
    assert counts is not None and counts[0] == 1 and counts[1] > 10 and counts[2] == 3
    for data_dir in ("one", "two"):  # nothing in the data dirs
        assert not (tmp_path / data_dir / "events.sqlite").exists()
