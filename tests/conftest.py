"""Test-wide isolation, the guard against real LLM requests, and the real services tests of
several folders use (the LLM server, PostgreSQL, Ray); a service one folder uses has its fixture
in that folder's conftest (Prometheus: packs/metrics, ChromaDB: packs/kpi, the weather replay
and the MCP servers: packs/city).

Every service comes from `tests/_services/` under one policy (`_services.policy`): it
starts, or the tests that need it fail, unless `CONCERTO_SKIP_<SERVICE>=1`; skips are
listed at the end of the run. Plain helpers are in `tests/_helpers/`; no test module imports
a conftest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _services import policy
from _services.llama import INSTALL_HINT as LLAMA_HINT
from _services.llama import LlamaServer, shared_llama_server
from _services.postgres import HINT as POSTGRES_HINT
from _services.postgres import Postgres, running_postgres
from _services.ray import HINT as RAY_HINT
from _services.ray import RayCluster, start_cluster, warm_up_workers
from concerto.redact import remembered_scope
from concerto.testing import block_llm_requests

# Before any test folder's conftest imports them: the helpers' asserts report like a test's.
pytest.register_assert_rewrite("_helpers")


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
