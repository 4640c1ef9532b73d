"""Without the `a2a` extra, the A2A paths of `concerto serve` say what to install (HTTP 501, in
each path's own error shape) instead of a 404; with it, they are the SDK's (`test_a2a_server.py`).

The SDK is installed in the test environment; a `None` entry in `sys.modules` makes
`import a2a` fail as it does without the package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import concerto.protocols
from concerto.agents.loader import load_packs
from concerto.orchestrator.engine import Orchestrator
from concerto.protocols.a2a_edge import CARD_PATH
from concerto.protocols.a2a_routes import MISSING
from concerto.server.app import create_app
from concerto.settings import Settings


def test_without_the_extra_the_card_and_the_endpoint_name_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "a2a" or m.startswith("a2a.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "a2a", None)
    monkeypatch.delitem(sys.modules, "concerto.protocols.a2a_server", raising=False)
    monkeypatch.delattr(concerto.protocols, "a2a_server", raising=False)
    settings = Settings(data_dir=tmp_path, store_events=False, agents="echo")
    orch = Orchestrator(settings, packs=load_packs("echo"))
    with TestClient(create_app(orchestrator=orch)) as client:
        assert "pip install 'concerto[a2a]'" in MISSING
        card = client.get("/.well-known/agent-card.json")  # the error contract
        assert card.status_code == 501 and card.json()["error_message"] == MISSING
        sent = client.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}})
        assert sent.status_code == 501  # JSON-RPC's error object, as an A2A client reads it
        assert sent.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": MISSING}}
        task = client.get("/a2a/tasks/abc")  # the HTTP+JSON binding's error
        assert task.status_code == 501
        assert task.json() == {"error": {"code": 501, "status": "UNIMPLEMENTED", "message": MISSING}}
        assert client.post("/v1/ask", json={"query": "echo: hi"}).json()["response"] == 'Echo: "hi"'


def test_the_card_path_is_the_sdks() -> None:
    """The paths are written out so that they exist without the SDK; they are the SDK's."""
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

    assert CARD_PATH == AGENT_CARD_WELL_KNOWN_PATH


def test_with_the_extra_the_card_is_served(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, store_events=False, agents="echo")
    orch = Orchestrator(settings, packs=load_packs("echo"))
    with TestClient(create_app(orchestrator=orch)) as client:
        card = client.get("/.well-known/agent-card.json")
        assert card.status_code == 200 and card.json()["name"] == "Concerto"
