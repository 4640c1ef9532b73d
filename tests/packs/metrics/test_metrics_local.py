"""`concerto metrics local`: a Prometheus and node exporter for a user without one, in a new
process as a user runs it, and the router sending monitoring requests to the metrics agent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from concerto.nlp.embeddings import Embedder
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.metrics.local import missing_binaries
from concerto.resources import Resources
from concerto.settings import Settings


def _concerto(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "concerto.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_without_the_binaries_the_command_says_how_to_get_them(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path), "CONCERTO_DATA_DIR": str(tmp_path / "data")}
    proc = _concerto("metrics", "local", env=env)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "apt-get install -y --no-install-recommends prometheus prometheus-node-exporter" in err


@pytest.fixture
def local_command(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`concerto metrics local --temp --port 0` running; yields it and its Prometheus URL."""
    if missing_binaries():
        if os.environ.get("CONCERTO_SKIP_PROMETHEUS") in {"1", "true"}:
            pytest.skip("CONCERTO_SKIP_PROMETHEUS=1")
        pytest.fail(f"missing {missing_binaries()}: apt-get install prometheus prometheus-node-exporter")
    env = {**os.environ, "CONCERTO_DATA_DIR": str(tmp_path / "data")}
    proc = _concerto("metrics", "local", "--temp", "--port", "0", "--scrape-interval", "1", env=env)
    try:
        assert proc.stdout is not None
        url = ""
        for line in proc.stdout:  # the URL is printed once the first scrapes are in
            if line.startswith("export CONCERTO_PROMETHEUS_URL="):
                url = line.strip().split("=", 1)[1]
                break
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


@pytest.mark.prometheus
def test_metrics_local_serves_this_machine_until_interrupted(
    local_command: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = local_command
    reply = httpx.get(f"{url}/api/v1/query", params={"query": "count(node_cpu_seconds_total)"}, timeout=10)
    assert reply.json()["data"]["result"], reply.text
    targets = httpx.get(f"{url}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
    children = {t["labels"]["job"]: t["scrapeUrl"] for t in targets}
    assert set(children) == {"node", "prometheus"}
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # both processes are gone with it
        try:
            httpx.get(url, timeout=1)
        except httpx.HTTPError:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"Prometheus at {url} still answers after the command stopped")


# --- routing ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder) -> Orchestrator:
    """Every built-in pack loaded, as a user has them (only the router is asked)."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("routing"), agents=None, store_events=False)
    resources = Resources(settings)
    resources.put("embedder", shared_embedder)
    return Orchestrator(settings, resources=resources)


@pytest.mark.parametrize(
    "question",
    [
        "forecast CPU usage for next week",
        "predict memory usage for tomorrow",
        "detect anomalies in CPU usage",
        "are there any anomalies in network traffic?",
        "is CPU usage correlated with network traffic?",
        "what is the temperature of the CPU?",
        "GPU utilisation for the last hour",
        "CPU usage by instance",
        "top 3 hosts by memory used",
        "which instance has the highest CPU",
        "the 2 least busy CPUs",
        "CPU now vs the same hour yesterday",
        "memory used this week compared to last week",
        "CPU usage this year",
        "CPU and memory used for the last hour",
    ],
)
async def test_monitoring_requests_reach_the_metrics_agent(everything: Orchestrator, question: str) -> None:
    decision = await everything.router.route(question)
    assert decision.classification.agents[:1] == ["metrics_agent"], decision.classification.reasoning


@pytest.mark.parametrize(
    ("question", "agent"),
    [
        ("forecast sales for the next quarter", "business_impact"),
        ("are there any unusual spikes in sales?", "pattern_recognition"),
        ("what's the temperature in Paris?", "temperature"),
        ("top 10 customers by sales", "sql_analytics"),
    ],
)
async def test_other_packs_keep_their_questions(everything: Orchestrator, question: str, agent: str) -> None:
    decision = await everything.router.route(question)
    assert decision.classification.agents[:1] == [agent], decision.classification.reasoning
