"""Fault suite: every backend URL carries `user:s3cret-PASSWORD@` and every backend fails; the
password appears in no output, no log line and no stored row.

The backends are real local listeners: a Prometheus that requires basic auth (its own 401),
a blackhole that accepts and never answers (a timeout), and ports where nothing listens (the
ChromaDB server, the weather provider, the LLM endpoint, Grafana, an MCP server). Questions go
through the CLI (each command a process of its own, as a user runs it) and through a real
`concerto serve`: `/v1/ask`, the SSE stream, runs, the OpenAI endpoint, `/ready`. Then every
output, the processes' stderr (their logs), every row of the log's database and every file of
the data dir are searched for the password.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from _services import policy
from _services.blackhole import blackhole
from _services.locked import locked_prometheus
from _services.ports import dead_url
from _services.postgres import Postgres
from _services.prometheus import INSTALL_HINT
from _services.serve import running_serve
from concerto.redact import MASK
from concerto.settings import Settings

PASSWORD = "s3cret-PASSWORD"
LEAK = "s3cret"  # any part of it: a message cut inside the password must not show the rest
METRICS = "show CPU usage for the last hour"
WEATHER = "what's the weather in Seattle?"
KPI = "home-loan attrition rate last month"


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@", 1)


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus that answers 401 to the wrong password."""
    running = locked_prometheus(tmp_path_factory.mktemp("locked-prometheus"))
    yield policy.start("prometheus", running.__enter__, INSTALL_HINT)
    running.__exit__(None, None, None)


@pytest.fixture
def env(tmp_path: Path, locked: str) -> dict[str, str]:
    """Every backend URL with a password, every backend failing, an LLM configured (unreachable)."""
    servers = tmp_path / "mcp.yaml"
    servers.write_text(f"servers:\n  - name: notes\n    url: {_with_password(dead_url('/mcp'))}?token={PASSWORD}\n")
    return {
        "CONCERTO_DATA_DIR": str(tmp_path / "data"),
        "CONCERTO_PROMETHEUS_URL": _with_password(locked),
        "CONCERTO_GRAFANA_URL": _with_password(dead_url()),
        "CONCERTO_CHROMA_URL": _with_password(dead_url()),
        "CONCERTO_WEATHER_URL": _with_password(dead_url()),
        "CONCERTO_LLM_BASE_URL": _with_password(dead_url("/v1")),
        "CONCERTO_LLM_MODEL": "m",
        "CONCERTO_LLM_TIMEOUT_S": "2",
        "CONCERTO_MCP_SERVERS_FILE": str(servers),
    }


def _concerto(env: dict[str, str], *args: str) -> str:
    """Run the CLI in a process of its own; its stdout and stderr (the log) together."""
    done = subprocess.run(
        [sys.executable, "-m", "concerto.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return f"$ concerto {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"


def _stored(data_dir: Path) -> str:
    """Every row of every table of the log's SQLite file, and every byte of the data dir."""
    found = []
    with sqlite3.connect(data_dir / "events.sqlite") as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            found += [repr(row) for row in con.execute(f"SELECT * FROM {table}")]
    found += [p.read_bytes().decode("latin-1") for p in data_dir.rglob("*") if p.is_file()]
    return "\n".join(found)


def test_config_shows_every_url_without_its_password(env: dict[str, str]) -> None:
    env = {**env, "CONCERTO_DATABASE_URL": f"postgresql://user:{PASSWORD}@127.0.0.1:1/db"}
    text = _concerto(env, "config")
    as_json = _concerto(env, "config", "--json")
    assert LEAK not in text + as_json
    values = json.loads(as_json.split("\n", 1)[1].rsplit("\n\n", 1)[0])
    for name in ("prometheus_url", "grafana_url", "chroma_url", "weather_url", "llm_base_url"):
        assert values[name].startswith("http://user:***@127.0.0.1:"), name
    assert values["database_url"] == "postgresql://user:***@127.0.0.1:1/db"
    assert "CONCERTO_CHROMA_URL=http://user:***@127.0.0.1:" in text


def test_config_shows_every_secret_with_the_one_mask() -> None:
    """`concerto config` masks a key or a token as every other secret shows (`redact.MASK`)."""
    settings = Settings(api_token="tok-" + PASSWORD, llm_api_key="sk-" + PASSWORD, llm_base_url="http://h/v1?key=k")
    values = settings.masked()
    assert values["api_token"] == values["llm_api_key"] == MASK
    assert values["llm_base_url"] == f"http://h/v1?key={MASK}"
    assert LEAK not in json.dumps(values)


def test_questions_through_the_cli_leak_no_password(env: dict[str, str]) -> None:
    outputs = [
        _concerto(env, "ask", METRICS, "--json", "--trace"),
        _concerto(env, "ask", WEATHER, "--json"),
        _concerto(env, "ask", KPI),
        _concerto({**env, "CONCERTO_GRAFANA_TOKEN": f"glsa_{PASSWORD}"}, "ask", METRICS, "--json"),  # Grafana wins
        _concerto(env, "events", "--limit", "1000"),
    ]
    everything = "\n".join(outputs) + _stored(Path(env["CONCERTO_DATA_DIR"]))
    assert LEAK not in everything
    # The failures are there, naming the backends (so the search above looked at real errors).
    assert "Prometheus refused the request (HTTP 401)" in outputs[0]
    assert "weather provider at http://user:***@127.0.0.1:" in outputs[1]
    assert "MCP server 'notes' skipped" in outputs[0] and "user:***@127.0.0.1" in outputs[0]
    assert "Grafana at http://user:***@127.0.0.1:" in outputs[3]


def test_questions_through_the_server_leak_no_password(env: dict[str, str]) -> None:
    with blackhole() as hole:
        env = {**env, "CONCERTO_PROMETHEUS_URL": _with_password(hole.url), "CONCERTO_METRICS_TIMEOUT_S": "1"}
        answers = []
        with running_serve(env) as served, httpx.Client(base_url=served.base, timeout=120) as client:
            for question in (METRICS, WEATHER, KPI):
                answers.append(client.post("/v1/ask", json={"query": question}).text)
            answers.append(client.get("/v1/ask/stream", params={"query": METRICS}).text)
            answers.append(client.post("/v1/ask/stream", json={"query": WEATHER}).text)
            chat = {"model": "concerto", "messages": [{"role": "user", "content": METRICS}]}
            answers.append(client.post("/v1/chat/completions", json=chat).text)
            answers.append(client.post("/v1/chat/completions", json={**chat, "stream": True}).text)
            run = client.post("/v1/runs", json={"query": WEATHER}).json()
            answers.append(client.get(run["events_url"]).text)
            answers.append(client.get(run["result_url"]).text)
            answers += [client.get(path).text for path in ("/ready", "/health", "/v1/agents/availability")]
        served.process.wait(timeout=30)
        log = served.process.stdout.read().decode() if served.process.stdout else ""
    everything = "\n".join(answers) + log + _stored(Path(env["CONCERTO_DATA_DIR"]))
    assert LEAK not in everything
    assert "Prometheus did not answer within 1 s" in answers[0]
    assert "weather provider at http://user:***@127.0.0.1:" in answers[1]


def test_the_database_url_password_stays_out(env: dict[str, str], postgres: Postgres) -> None:
    """The throwaway cluster trusts 127.0.0.1, so a URL with any password connects: the log and
    the sources live in PostgreSQL, whose rows are searched; then a cluster that is not there."""
    working = postgres.url.replace("postgres@", f"postgres:{PASSWORD}@")
    outputs = [
        _concerto({**env, "CONCERTO_DATABASE_URL": working}, "ask", METRICS, "--json"),
        _concerto({**env, "CONCERTO_DATABASE_URL": working}, "data", "list", "--json"),
    ]
    stored = postgres.psql(  # every row of every table of the log (each owner makes its tables on first use)
        "SELECT string_agg(query_to_xml(format('SELECT * FROM concerto_log.%I', table_name), true, false, '')::text, "
        "E'\\n') FROM information_schema.tables WHERE table_schema = 'concerto_log'"
    )
    assert "grafana_unavailable" in stored or "401" in stored  # the metrics question's events are there
    down = f"postgresql://user:{PASSWORD}@127.0.0.1:1/db"
    outputs += [
        _concerto({**env, "CONCERTO_DATABASE_URL": down}, "ask", "echo: hi", "--json"),
        _concerto({**env, "CONCERTO_DATABASE_URL": down}, "data", "list"),
        _concerto({**env, "CONCERTO_DATABASE_URL": down.replace(":1/", ":abc/")}, "events"),
    ]
    assert LEAK not in "\n".join(outputs) + stored
    assert "cannot be reached" in outputs[2] or "cannot connect" in outputs[3]
