"""The Python API as documented: docs/python-api.md and the README's Python tour run as doctests,
so every example there is what the code does."""

from __future__ import annotations

import doctest
from collections.abc import Iterator
from pathlib import Path

import pytest

import concerto
from concerto import api

ROOT = Path(__file__).resolve().parents[1]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.fixture
def fresh_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`concerto.ask`'s shared orchestrator built for this test's settings, closed after it."""
    monkeypatch.setenv("CONCERTO_AGENTS", "echo,kpi")
    api.close()
    yield
    api.close()


@pytest.mark.parametrize("document", ["docs/python-api.md", "README.md"])
def test_documented_examples_run(fresh_api: None, document: str) -> None:
    result = doctest.testfile(str(ROOT / document), module_relative=False, optionflags=FLAGS, verbose=False)
    assert result.attempted > 0, f"{document} has no Python examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {document} failed (output above)"


def test_ask_reuses_one_orchestrator_and_close_releases_it(fresh_api: None) -> None:
    concerto.ask("echo one")
    first = api._shared._orchestrator
    concerto.ask("echo two")
    assert api._shared._orchestrator is first is not None
    api.close()
    assert api._shared._orchestrator is None
    assert concerto.ask("echo three").response == 'Echo: "three"'  # a new one, on first use again


def test_ask_takes_the_input_contract_and_more_fields(fresh_api: None) -> None:
    from concerto import OrchestratorInput

    result = concerto.ask(OrchestratorInput(query="echo contract"), output_format="brief")
    assert result.response == 'Echo: "contract"'
    refused = concerto.ask("echo hi", output_format="poem")
    assert refused.error_category == "invalid_input" and "output_format" in refused.error_message
