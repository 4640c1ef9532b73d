"""docs/packs.md's walkthrough, executed: its files are written, pip installs the package, and
the commands it shows run, in new processes, with no change to Concerto's files.

The third-party pack adds an agent, a setting, an intent, a command and a route.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "packs.md"
BLOCK = re.compile(r'```\w+ title="([^"]+)"\n(.*?)\n```', re.S)
NOW = "2025-06-15T12:00:00Z"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The walkthrough's package, written from the doc and installed by pip into its own folder."""
    work = tmp_path_factory.mktemp("walkthrough")
    files = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert len(files) >= 4, "the walkthrough's files are code blocks with a title"
    for name, text in files:
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    target = work / "site"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*command, "--target", str(target), str(work / "concerto-glossary")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return target


@pytest.fixture
def concerto(site: Path, tmp_path: Path) -> Iterator[object]:
    env = {**os.environ, "PYTHONPATH": str(site), "CONCERTO_DATA_DIR": str(tmp_path / "data")}

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "concerto.cli", *args]
        return subprocess.run(command, env={**env, **extra}, capture_output=True, text=True, timeout=180)

    yield run


def test_the_agent_is_listed_and_answers(concerto) -> None:  # type: ignore[no-untyped-def]
    agents = concerto("agents", "--json")
    assert agents.returncode == 0, agents.stderr
    [glossary] = [a for a in json.loads(agents.stdout) if a["name"] == "glossary"]
    assert glossary["pack"] == "glossary" and "warning" not in agents.stderr

    asked = concerto("ask", "What does NPS mean?", "--json")
    assert asked.returncode == 0, asked.stderr
    body = json.loads(asked.stdout)
    assert body["agents_invoked"] == ["glossary"] and "Net Promoter Score" in body["response"]
    assert body["intent_classification"]["entities_extracted"] == {"term": "nps"}


def test_its_setting_is_configured_like_any_other(concerto, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    listed = concerto("config")
    assert "# glossary\nCONCERTO_GLOSSARY_FILE=\n" in listed.stdout
    mine = tmp_path / "my_terms.yaml"
    mine.write_text("NPS: Our survey's net promoter score, asked every quarter.\n", encoding="utf-8")
    asked = concerto("ask", "What does NPS mean?", "--json", CONCERTO_GLOSSARY_FILE=str(mine))
    assert json.loads(asked.stdout)["agent_results"][0]["output"] == {
        "term": "nps",
        "definition": "Our survey's net promoter score, asked every quarter.",
    }
    assert json.loads(concerto("config", "--json", CONCERTO_GLOSSARY_FILE=str(mine)).stdout)["glossary_file"] == str(
        mine
    )


def test_its_command_runs(concerto) -> None:  # type: ignore[no-untyped-def]
    assert "glossary" in concerto("--help").stdout
    listed = concerto("glossary", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["headcount"].startswith("The number of people")


def test_its_intent_runs_two_packs_together(concerto) -> None:  # type: ignore[no-untyped-def]
    question = "explain attrition rate and show home-loan attrition rate last month"
    asked = concerto("ask", question, "--json", "--now", NOW)
    assert asked.returncode == 0, asked.stderr
    body = json.loads(asked.stdout)
    assert body["intent_classification"]["primary_intent"] == "explain_kpi"
    assert body["breakdown"]["plan"]["source"] == "table"
    assert sorted(body["agents_invoked"]) == ["glossary", "kpi"]
    assert all(r["status"] == "completed" for r in body["agent_results"])


def test_its_route_is_served(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(site))
    from concerto.server.app import create_app

    with TestClient(create_app()) as client:
        terms = client.get("/v1/glossary").json()
        assert terms["nps"].startswith("Net Promoter Score")
        assert client.get("/health").json()["failed_packs"] == []
        assert "/v1/glossary" in client.get("/openapi.json").json()["paths"]
