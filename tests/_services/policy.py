"""One policy for every real service the suite starts: it must start, unless explicitly skipped.

`CONCERTO_SKIP_<SERVICE>=1` (LLM, PROMETHEUS, CHROMA, POSTGRES, CONFORMANCE, RAY) skips the
tests that need that service. Any other reason a service cannot start (not installed,
died, never answered) fails those tests with what to install: a missing service must
not quietly turn tests into skips. Every skip is listed at the end of the run (see
`pytest_terminal_summary` in tests/conftest.py), so a green run that skipped says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

SERVICES = ("llm", "prometheus", "chroma", "postgres", "conformance", "ray")

# Read once, at import: the per-test isolation clears every CONCERTO_* variable later.
SKIP_REQUESTED = frozenset(s for s in SERVICES if os.environ.get(f"CONCERTO_SKIP_{s.upper()}", "") in {"1", "true"})

skipped: dict[str, str] = {}  # service -> why, for the summary


def skip_requested(service: str) -> bool:
    return service in SKIP_REQUESTED or os.environ.get(f"CONCERTO_SKIP_{service.upper()}") in {"1", "true"}


def start(service: str, starter: Callable[[], T], hint: str) -> T:
    """Start a service for a fixture: skip on request, otherwise start it or fail the test with `hint`."""
    if skip_requested(service):
        skipped[service] = f"CONCERTO_SKIP_{service.upper()}=1"
        pytest.skip(f"CONCERTO_SKIP_{service.upper()}=1: tests that need {service} are skipped")
    try:
        return starter()
    except Exception as exc:
        pytest.fail(f"{service} could not start: {exc}\n  to fix: {hint}", pytrace=False)


def summary() -> list[str]:
    """One line per skipped service, for the end of the run."""
    return [f"{service}: skipped ({why})" for service, why in sorted(skipped.items())]
