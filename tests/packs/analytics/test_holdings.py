"""What the analytics agents hold, for routing: made once per version of the loaded sources and
shared by the eleven agents, so a source of thousands of columns costs one pass at load, not
one per agent and question (it was 4 s of every routed question with 10,000 columns)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _helpers.analytics import make_orchestrator
from concerto.data.sources import store_for
from concerto.nlp.embeddings import Embedder
from concerto.orchestrator import router as router_module
from concerto.packs.analytics import _base


async def test_holdings_are_made_once_per_version_of_the_sources(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted, not timed: with 3,000 columns each of the eleven agents made its list on every
    question (about 1.3 s a question), and the router read every term."""
    made: list[int] = []
    original = _base.holdings_of
    monkeypatch.setattr(_base, "holdings_of", lambda contexts: made.append(len(contexts)) or original(contexts))
    indexed: list[int] = []
    index = router_module.TermIndex
    monkeypatch.setattr(router_module, "TermIndex", lambda terms: indexed.append(len(terms)) or index(terms))
    orchestrator = make_orchestrator(tmp_path / "data", embedder, agents=None)
    columns = [f"gauge_{n}_reading" for n in range(3000)]
    wide = tmp_path / "plant.csv"
    wide.write_text(
        ",".join(["line", *columns]) + "\n" + "".join(f"L{r % 4}," + ",".join("1" * 3000) + "\n" for r in range(20))
    )
    store_for(orchestrator.settings, orchestrator.resources).load(wide, "plant")
    await orchestrator.router.route("warm up")  # the router's model and vectors, and its index of the holdings
    assert made == [1] and len([n for n in indexed if n > 3000]) == 1  # the columns' terms, indexed once
    before = len(indexed)
    for question in ("what time is it in Chicago?", "average gauge 1234 reading by line", "weather in Boston"):
        decision = await orchestrator.router.route(question)
    assert decision.classification.agents[:1] == ["temperature"]
    assert made == [1] and len(indexed) == before  # one source, once, for the eleven agents and four questions
    held = [orchestrator.agent(name).holdings() for name in ("sql_analytics", "risk", "segmentation")]
    assert held[0] is held[1] is held[2]
    assert held[0] is not None and "gauge 1234 reading" in held[0].terms and "l1" not in held[0].terms
    assert "sql_analytics" in orchestrator.router._held(["average gauge 1234 reading by line"])[0]

    csv = tmp_path / "more.csv"
    csv.write_text("plant,widget_yield\nA,0.9\n")
    store_for(orchestrator.settings, orchestrator.resources).load(csv, "more")
    after = orchestrator.agent("risk").holdings()
    assert after is not held[0] and after is not None and "widget yield" in after.terms
    assert made == [1, 2]


def test_terms_are_distinct_in_order_with_units_dropped() -> None:
    terms = _base._terms(["flipper_length_mm", "Region", "region", "id", "flipper length", "x"])
    assert terms == ("flipper length mm", "flipper length", "region")
