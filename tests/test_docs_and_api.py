"""Every setting is documented; the public API is one sorted `__all__` that resolves."""

from __future__ import annotations

from pathlib import Path

import concerto
from concerto.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def test_every_setting_is_documented() -> None:
    text = (ROOT / "docs" / "settings.md").read_text()
    missing = [n for n in Settings.model_fields if f"`CONCERTO_{n.upper()}`" not in text]
    assert not missing, f"document these in docs/settings.md: {missing}"


def test_public_api_is_sorted_and_importable() -> None:
    assert concerto.__all__ == sorted(concerto.__all__)
    for name in concerto.__all__:
        assert getattr(concerto, name) is not None


def test_readme_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    first, second = (block.split("\n", 1)[1].strip() for block in readme.split("```bash")[1:3])
    assert first.startswith("bash scripts/demo.sh") and second.startswith("bash scripts/test.sh")
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("exec bash scripts/test.sh")
