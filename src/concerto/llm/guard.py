"""A switch that refuses LLM requests to endpoints nobody allowed, for test suites.

Off by default: Concerto calls the endpoint it is configured with. A test suite turns it
on (`concerto.testing.block_llm_requests`, autouse in Concerto's own tests, as
pydantic-ai's `ALLOW_MODEL_REQUESTS = False` is in its users'), and allows the servers
it starts (`concerto.testing.allow_llm_endpoint`). Then a test that would reach any
other endpoint, a real provider picked up from the environment for instance, is refused
before a byte leaves, and the refusal is recorded so the test fails even where the
orchestrator falls back gracefully on LLM errors. Requests through a custom httpx
transport (`httpx.MockTransport`) never leave the process and are always allowed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from concerto.redact import mask_url

_allowed: set[str] = set()  # origins (scheme://host:port) that may be called while blocking
_blocking = False
refused: list[str] = []  # URLs refused while blocking, oldest first


class LLMRequestBlocked(RuntimeError):
    """An LLM request to an endpoint the test did not allow."""


def check(url: str) -> None:
    """Raise `LLMRequestBlocked` (and record it) if blocking is on and `url` is not allowed."""
    if not _blocking or _origin(url) in _allowed:
        return
    refused.append(url)
    raise LLMRequestBlocked(
        f"LLM request to {mask_url(url)} refused: LLM requests are blocked in tests; start a server in the "
        "test and allow it with concerto.testing.allow_llm_endpoint(url)"
    )


def set_blocking(on: bool) -> bool:
    """Turn blocking on or off; returns the previous state."""
    global _blocking
    previous, _blocking = _blocking, on
    return previous


def allow(url: str) -> None:
    """Allow requests to the server at `url` (any path on its scheme, host and port) from now on."""
    _allowed.add(_origin(url))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()
