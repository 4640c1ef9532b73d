"""Helpers of the commercial pack's tests: the agents' clock and loading a user's file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from concerto.data.store import Store

NOW = datetime(2026, 11, 15, 12, 0, tzinfo=UTC)


def load_table(store: Store, path: Path, name: str) -> None:
    """Load a user file (CSV, Parquet) as a source, as `concerto data load` does."""
    store.load(path, name)
