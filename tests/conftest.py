"""Test-wide isolation, the guard against real LLM requests, and the real services any test may use.

Every service comes from `tests/_services/` under one policy (`_services.policy`): it
starts, or the tests that need it fail, unless `CONCERTO_SKIP_<SERVICE>=1`; skips are
listed at the end of the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _services import policy
from _services.chroma import HINT as CHROMA_HINT
from _services.chroma import running_chroma
from _services.llama import INSTALL_HINT as LLAMA_HINT
from _services.llama import LlamaServer, shared_llama_server
from _services.mcp import running_http_servers
from _services.postgres import HINT as POSTGRES_HINT
from _services.postgres import Postgres, running_postgres
from _services.prometheus import INSTALL_HINT as PROMETHEUS_HINT
from _services.prometheus import LocalPrometheus
from _services.ray import HINT as RAY_HINT
from _services.ray import RayCluster, start_cluster, warm_up_workers
from _services.weather import Replay
from concerto.redact import remembered_scope
from concerto.testing import block_llm_requests


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No `CONCERTO_*` setting (nor OPENAI_API_KEY) from the caller's environment; the session's data dir."""
    for name in list(os.environ):
        if name.startswith("CONCERTO_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    data_dir = tmp_path_factory.getbasetemp() / "concerto-data"
    monkeypatch.setenv("CONCERTO_DATA_DIR", str(data_dir))
    yield data_dir


@pytest.fixture(autouse=True)
def _secrets_remembered_by_this_test_only() -> Iterator[None]:
    """What a test makes `concerto.redact` remember (every `Settings(api_token=...)` does) is
    forgotten after it: no test's result depends on the secrets of the tests run before."""
    with remembered_scope():
        yield


@pytest.fixture(autouse=True)
def _no_llm_requests_but_ours() -> Iterator[None]:
    """A test that would reach an LLM endpoint the suite did not start (and allow) fails."""
    with block_llm_requests():
        yield


@pytest.fixture
def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """`install_plugin(module, source, entry_points)` makes `module` importable and declares its
    entry points (`{"concerto.agents": {"name": "module:pack"}}`), as pip would; undone after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(module: str, source: str, entry_points: dict[str, dict[str, str]]) -> None:
        (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
        dist = tmp_path / f"{module}-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
        lines = [
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in entry_points.items()
        ]
        (dist / "entry_points.txt").write_text("\n".join(lines))

    return install


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = policy.summary()
    if lines:
        terminalreporter.write_sep("=", "real services skipped on request")
        for line in lines:
            terminalreporter.write_line(line)


# -- real services, one per session ------------------------------------------------------


@pytest.fixture(scope="session")
def llama_server() -> LlamaServer:
    """The real OpenAI-compatible server (llama-cpp-python + SmolLM2-135M), allowed by the guard."""
    return policy.start("llm", shared_llama_server, LLAMA_HINT)


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPrometheus]:
    """Node exporter + Prometheus on free loopback ports, 1 s scrapes, data already there."""
    local = LocalPrometheus(scrape_interval_s=1, workdir=tmp_path_factory.mktemp("prometheus"))
    policy.start("prometheus", lambda: local.start(wait_for_data_s=60, settle_s=3), PROMETHEUS_HINT)
    yield local
    local.stop()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real ChromaDB server (`chroma run`)."""
    running = running_chroma(tmp_path_factory.mktemp("chroma-server"))
    url = policy.start("chroma", running.__enter__, CHROMA_HINT)
    yield url
    running.__exit__(None, None, None)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL cluster (Debian's server binaries)."""
    running = running_postgres()
    server = policy.start("postgres", running.__enter__, POSTGRES_HINT)
    yield server
    running.__exit__(None, None, None)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """A local Ray cluster (its own head process), joined by this process for the session."""
    cluster = policy.start("ray", start_cluster, RAY_HINT)
    os.environ.update(cluster.auth)  # this process and the servers tests start join with the token
    import ray

    try:
        ray.init(address=cluster.address, namespace="concerto", log_to_driver=False)
        warm_up_workers()
        yield cluster
    finally:
        ray.shutdown()
        cluster.stop()


@pytest.fixture(scope="session")
def weather_replay() -> Iterator[Replay]:
    """A local weather provider replaying recorded Open-Meteo answers."""
    with Replay() as replay:
        yield replay


@pytest.fixture(scope="session")
def mcp_http_servers(weather_replay: Replay) -> Iterator[dict[str, str]]:
    """The city pack's three MCP servers over streamable HTTP: name → /mcp URL."""
    with running_http_servers(("weather", "datetime", "echo"), weather_url=weather_replay.url) as urls:
        yield urls
