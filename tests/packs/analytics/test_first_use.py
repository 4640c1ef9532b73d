"""On a fresh data dir the demo table is loaded (and its texts embedded) before the analytics
agents' tasks start, outside their timeouts, with progress; never when the question is about
a source of the user's, or names one."""

from __future__ import annotations

from pathlib import Path

from _helpers.analytics import close_stores, make_orchestrator
from concerto.contracts.orchestrator import OrchestratorInput, OrchestratorOutput
from concerto.data.sources import demo_first_use, store_for
from concerto.nlp.embeddings import Embedder
from concerto.orchestrator.events import EventStream


async def test_the_demo_table_is_prepared_before_the_plan_runs(tmp_path: Path, embedder: Embedder) -> None:
    orchestrator = make_orchestrator(tmp_path, embedder)
    try:
        agent = orchestrator.agent("segmentation")
        work = agent.first_use(OrchestratorInput(query="segment our customers by sales tier"))
        assert work is not None and (work.key, work.title) == ("data.demo", "the demo table")
        events = EventStream("", 1000)
        result = await orchestrator.ask("segment our customers by sales tier", events=events)
        assert isinstance(result, OrchestratorOutput), result
        titles = [e.title for e in events.events]
        preparing = next(i for i, t in enumerate(titles) if t.startswith("Preparing the demo table (first use, about"))
        assert titles[preparing + 1].startswith("Prepared the demo table in ")
        assert preparing < titles.index("Dispatching agents")
        assert result.breakdown["first_use_ms"] > 0
        assert agent.first_use() is None  # loaded: nothing left to prepare
        assert [c.name for c in store_for(orchestrator.settings, orchestrator.resources).contexts()] == ["demo"]
    finally:
        close_stores(orchestrator)


def test_not_for_a_question_about_the_users_own_source(tmp_path: Path, embedder: Embedder) -> None:
    orchestrator = make_orchestrator(tmp_path, embedder)
    store = store_for(orchestrator.settings, orchestrator.resources)
    try:
        assert demo_first_use(store, OrchestratorInput(query="total sales", source="sales")) is None
        assert demo_first_use(store, OrchestratorInput(query="total sales", parameters={"source": "x"})) is None
        assert orchestrator.agent("data_ingestion").first_use() is None  # it loads the file it is given
        csv = tmp_path / "sales.csv"
        csv.write_text("region,amount\nNorth,10\nSouth,20\n", encoding="utf-8")
        store.load(csv, "sales")
        assert demo_first_use(store) is None  # questions are about the user's own table now
    finally:
        close_stores(orchestrator)
