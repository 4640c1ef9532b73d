"""The answer-column ranker: its shipped weights fit its features, it picks among the columns
the reading left free, and a weights file fitted on other features is not used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _helpers.tables import players as table
from concerto.packs.analytics.table import ranker
from concerto.packs.analytics.table.answer import asked_columns, candidates
from concerto.packs.analytics.table.mentions import find_columns, tokens


def test_the_shipped_weights_fit_the_features() -> None:
    data = json.loads(ranker.WEIGHTS.read_text(encoding="utf-8"))
    assert set(data["weights"]) == set(ranker.FEATURES)
    assert "scripts.train_column_ranker" in data["command"]
    assert ranker.weights() is not None


def test_it_chooses_a_free_column() -> None:
    t = table()
    toks = tokens("which nation did Ann Lee play for?")
    found = candidates(toks, find_columns(toks, t), t, {"Name"}, "Nation", "Nation")
    assert {c.column for c in found} == {"Nation", "Points", "Year"}
    assert all(set(c.features) == set(ranker.FEATURES) for c in found)
    assert asked_columns("which nation did Ann Lee play for?", toks, find_columns(toks, t), t, {"Name"}) == ["Nation"]


def test_weights_of_other_features_are_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "column_ranker.json"
    stale.write_text(json.dumps({"weights": {"something_else": 1.0}, "bias": 0.0}), encoding="utf-8")
    monkeypatch.setattr(ranker, "WEIGHTS", stale)
    ranker.weights.cache_clear()
    try:
        assert ranker.weights() is None
        assert ranker.best(candidates(["who"], [], table(), set(), "Name", None)) is None
    finally:
        ranker.weights.cache_clear()
