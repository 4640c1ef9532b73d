"""`CONCERTO_EXECUTOR=ray` where Ray is not installed: the answer names the extra to install
(no traceback), the agents that stay in process still answer, and `/ready` says why not.

Ray is installed in the test environment; a `None` entry in `sys.modules` makes `import ray`
fail as it does without the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from concerto.agents.loader import load_registry
from concerto.agents.registry import AgentRegistry
from concerto.orchestrator.engine import Orchestrator
from concerto.server.app import create_app
from concerto.settings import Settings

WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from concerto.cli import main; sys.argv[0] = 'concerto'; main()"


def ask(tmp_path: Path, question: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONCERTO_DATA_DIR": str(tmp_path), "CONCERTO_EXECUTOR": "ray"}
    env["CONCERTO_AGENTS"] = "echo,causal_impact"
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY, "ask", question, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_shipped_agent_says_which_extra_to_install(tmp_path: Path) -> None:
    done = ask(tmp_path, "What's the impact of increased sampling on Kisqali prescriptions?")
    assert done.returncode == 1 and "Traceback" not in done.stderr + done.stdout, done.stderr
    result = json.loads(done.stdout)
    (task,) = result["partial_results"]
    error = task["errors"][0]
    assert error["error_type"] == "ray_not_installed"
    assert error["message"] == "causal_impact could not run: CONCERTO_EXECUTOR=ray, but Ray is not installed"
    assert "pip install 'concerto[ray]'" in error["suggestion"]


def test_agents_that_stay_in_process_still_answer(tmp_path: Path) -> None:
    done = ask(tmp_path, "echo: hi")  # echo declares remote=never
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["response"] == 'Echo: "hi"'


def test_ready_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    settings = Settings(data_dir=tmp_path, store_events=False, executor="ray")
    orch = Orchestrator(settings, registry=AgentRegistry([load_registry("echo").get("echo")]))
    with TestClient(create_app(orchestrator=orch)) as client:
        check = client.get("/ready").json()["checks"]["cluster"]
    assert check["ok"] is False
    assert check["detail"].startswith("CONCERTO_EXECUTOR=ray, but Ray is not installed. Install Ray with: pip install")
