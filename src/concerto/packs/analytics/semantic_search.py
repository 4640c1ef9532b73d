"""`semantic_search` (004): similarity search over the text embedded at load time.

"Find customers similar to Acme Energy": the named entity's own text is the reference;
"records about supply chain issues": the question's concept is. The nearest values of
the embedded text column (cosine similarity: `array_cosine_similarity` on DuckDB, numpy
over the fetched vectors on PostgreSQL without pgvector) are then joined back to their
rows. The agent is offered to the router only when a loaded source has embeddings
(`ready()`), as the spec asks.
"""

from __future__ import annotations

import asyncio

import numpy as np
from sqlglot import exp

from concerto.agents.base import AgentFailure, AgentInfo
from concerto.contracts.common import ErrorKind
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.data.sources import named_source, store_for
from concerto.data.store import QueryFailed, SourceError
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Planned, Work
from concerto.packs.analytics.semantic_text import concept_of

TOP_K = 10


class SemanticSearchAgent(AnalyticsAgent):
    """Nearest records by meaning, from the embeddings made at load time."""

    llm_planning = False  # its own steps (the LLM, when configured, reasons where the step needs it)
    info = AgentInfo(
        name="semantic_search",
        description=(
            "Searches the free text of a loaded table by meaning (vector similarity over embeddings made at "
            "load time): records about a topic, or entities similar to a given one."
        ),
        capabilities=[
            "Find entities similar to a reference entity or description",
            "Perform semantic similarity search on embedded text",
            "Answer natural language questions against text data",
            "Retrieve contextually relevant records",
            "Rank results by semantic relevance",
        ],
        inputs={"request": "What to search for", "data_source_id": "Source with embeddings"},
        outputs={"results": "The most similar records with their similarity", "insights": "What was found"},
        examples=[
            "find customers similar to Acme Energy",
            "show me records about supply chain issues",
            "which customers are like Zenith Labs?",
            "customers whose description mentions shipping disruptions",
            "find X similar to the X",
            "which X are like the X?",
            "search for X",
            "which records mention X?",
        ],
        default_timeout_ms=30000,
    )

    def ready(self, query: OrchestratorInput | None = None) -> str | None:
        """Ready when the source the question is about has embedded text (the named one, else
        the only one loaded); with several loaded and none named, when any has."""
        try:
            contexts = store_for(self.settings, self.resources).contexts()
        except (QueryFailed, SourceError):
            return None  # the database's trouble is reported when a question runs
        named = named_source(query)
        mine = [c for c in contexts if c.name == named or c.data_source_id == named] if named else contexts
        if named is None and len([c for c in contexts if c.name != "demo"]) == 1:
            mine = [c for c in contexts if c.name != "demo"]
        if mine and not any(c.embedded_columns for c in mine):
            return "the source has no embedded text (load one with a text column)"
        return None  # the demo, loaded on first use, has embeddings

    async def plan_steps(self, work: Work) -> list[Planned]:
        source = work.source
        texts = [c for c in source.embedded_columns if source.detected_types[c].role == "text"]
        column = next(iter(texts or source.embedded_columns), None)
        if column is None or work.store is None:
            raise AgentFailure(
                f"The source '{source.name}' has no embedded text to search; its text columns are "
                f"{', '.join(source.columns_with('text', 'label')) or 'none'}.",
                error_type="no_embeddings",
                kind=ErrorKind.VALIDATION,
            )
        reference, vector, exclude = await self._reference(work, column)
        store = work.store
        placeholder = sql.select_from(source, sql.col(column)).limit(0)
        planned = Planned(f"{column} values nearest to {reference}", placeholder, "table", kind="nearest")
        try:
            found = await asyncio.to_thread(store.nearest, source, column, vector, TOP_K + len(exclude))
        except (QueryFailed, SourceError) as exc:
            work.before.append(Executed(planned, error=str(exc)))
            raise AgentFailure(str(exc), error_type="query_failed") from None
        work.before.append(Executed(planned, found))
        hits = [r for r in found.data if r["value"] not in exclude][:TOP_K]
        work.reading.notes.append(f"searched {column} for {reference}")
        return [_rows(work, column, hits, reference)]

    async def _reference(self, work: Work, column: str) -> tuple[str, np.ndarray, set[str]]:
        """What to search for: a named entity's own text (excluded from the hits), else the concept."""
        source = work.source
        label = sql.label_column(source)
        named = next((f for f in work.reading.filters if f.column in (label, source.semantic_profile.entity_key)), None)
        if named is not None and work.store is not None:
            query = sql.select_from(source, sql.col(column)).distinct()
            query = query.where(exp.In(this=sql.col(named.column), expressions=[sql.literal(v) for v in named.values]))
            done = await self.run_query(
                work,
                Planned(
                    f"{column} of {words.listing([str(v) for v in named.values])}",
                    query.limit(5),
                    "table",
                    kind="reference",
                ),
            )
            texts = [str(r[column]) for r in (done.result.data if done.result else []) if r[column] is not None]
            if texts:
                vectors = await asyncio.to_thread(self.resources.embedder.embed, texts)
                mean = vectors.mean(axis=0)
                return f"{words.listing([str(v) for v in named.values])}", mean / np.linalg.norm(mean), set(texts)
        concept = concept_of(work.request, source) or work.request
        vector = (await asyncio.to_thread(self.resources.embedder.embed, [concept]))[0]
        return f"'{concept}'", vector, set()

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        nearest = next((e for e in executed if e.planned.kind == "nearest" and e.result is not None), None)
        rows = next((e.result.data for e in executed if e.planned.kind == "rows" and e.result is not None), [])
        entity = work.source.semantic_profile.entity_name
        if nearest is None or not rows:
            return Insights("Nothing similar was found.")
        reference = nearest.planned.purpose.split(" nearest to ", 1)[-1]
        best = rows[0]
        summary = f"{len(rows)} {words.plural(entity)} closest in meaning to {reference}: " + words.listing(
            [f"{words.who(r)} ({r['similarity']:.2f})" for r in rows], 5
        )
        findings = [
            summary,
            f"Most similar: {words.who(best)} (cosine similarity {best['similarity']:.2f} of the embedded text; "
            f"searched {nearest.result.row_count if nearest.result else 0} nearest texts)",
        ]
        return Insights(summary, findings, follow_ups=[f"how do these {words.plural(entity)} compare to the average?"])


def _rows(work: Work, column: str, hits: list[dict[str, object]], reference: str) -> Planned:
    """The rows (one per entity) whose text is one of the hits, with its similarity."""
    source = work.source
    key = source.semantic_profile.entity_key
    label = sql.label_column(source)
    similarity = exp.Case(
        ifs=[
            exp.If(
                this=exp.EQ(this=sql.col(column), expression=sql.literal(h["value"])), true=sql.literal(h["similarity"])
            )
            for h in hits
        ]
    )
    shown = [c for c in dict.fromkeys([key, label, column]) if c]
    condition = (
        exp.In(this=sql.col(column), expressions=[sql.literal(h["value"]) for h in hits]) if hits else exp.false()
    )
    if key:
        projections: list[exp.Expr] = [sql.col(key)]
        projections += [exp.alias_(exp.AnyValue(this=sql.col(c)), sql.alias(c)) for c in shown if c != key]
        projections.append(exp.alias_(exp.Max(this=similarity), "similarity"))
        query = sql.select_from(source, *projections).where(condition).group_by(sql.col(key))
    else:
        query = sql.select_from(source, *(sql.col(c) for c in shown), exp.alias_(similarity, "similarity"))
        query = query.where(condition)
    query = query.order_by(exp.Ordered(this=exp.column("similarity"), desc=True)).limit(TOP_K * 5)
    return Planned(
        f"{words.plural(source.semantic_profile.entity_name)} nearest to {reference}", query, "table", kind="rows"
    )
