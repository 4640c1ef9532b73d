"""What holds for the whole project: settings documented, the public API, the README's two
commands, the test isolation, nothing test-only under src/ (the import graph's rules, no
import cycle among them: test_layering.py)."""

from __future__ import annotations

import os
from pathlib import Path

import concerto
from concerto.agents.loader import load_packs
from concerto.settings import reference

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def test_settings_doc_is_generated_from_every_pack() -> None:
    """docs/settings.md ends with `concerto config --markdown`: every setting of every pack, current."""
    text = (ROOT / "docs" / "settings.md").read_text()
    table = reference(load_packs().settings_sections())
    assert text.endswith(table), "regenerate the table: concerto config --markdown"
    assert "`CONCERTO_PROMETHEUS_URL`" in table and "`CONCERTO_WEATHER_URL`" in table


def test_public_api_is_sorted_and_importable() -> None:
    assert concerto.__all__ == sorted(concerto.__all__)
    for name in concerto.__all__:
        assert getattr(concerto, name) is not None
    assert {"Pack", "PackSettings", "Agent", "Orchestrator"} <= set(concerto.__all__)


def test_readme_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    first, second = (block.split("\n", 1)[1].strip() for block in readme.split("```bash")[1:3])
    assert first.startswith("bash scripts/demo.sh") and second.startswith("bash scripts/test.sh")
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("exec bash scripts/test.sh")


def test_no_setting_leaks_in_from_the_environment() -> None:
    """tests/conftest.py clears every CONCERTO_* variable but the test data dir."""
    assert [k for k in os.environ if k.startswith("CONCERTO_")] == ["CONCERTO_DATA_DIR"]


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "concerto").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def test_nothing_test_only_under_src() -> None:
    """Services for tests live in tests/_services; src/ imports neither pytest nor them."""
    for name, path in _modules().items():
        text = path.read_text()
        assert "import pytest" not in text and "_services" not in text, name
