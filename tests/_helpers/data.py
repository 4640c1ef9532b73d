"""Helpers of the data layer's tests."""

from __future__ import annotations

from pathlib import Path


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    """`tmp_path/name` holding `text` (encoded as UTF-8) or these bytes."""
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path
