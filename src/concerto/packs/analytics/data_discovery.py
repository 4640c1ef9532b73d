"""`data_discovery` (004): what a source holds and which questions it can answer.

Columns with their types, what kind of data each is, ranges, nulls, samples and meaning
come from the data context; one query confirms the row count and the time span on the
live table. With several sources loaded and none named, it lists them all.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentContext, AgentInfo
from concerto.agents.task import TaskInput
from concerto.data.context import DataContext
from concerto.data.sources import store_for
from concerto.data.store import Store
from concerto.packs.analytics import sql
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Planned, Work
from concerto.packs.analytics.data_ingestion import describe


class DataDiscoveryAgent(AnalyticsAgent):
    """Describes the loaded sources: columns, types, ranges, meanings, questions to ask."""

    llm_planning = False  # its own steps (the LLM, when configured, reasons where the step needs it)
    needs_values = False
    info = AgentInfo(
        name="data_discovery",
        description=(
            "Describes the loaded data: which tables exist, their columns, types, ranges, missing values and "
            "what each column means, and which questions the data can answer."
        ),
        capabilities=[
            "List the loaded data sources",
            "Describe a table's columns, types, value ranges and missing values",
            "Explain what each column seems to mean",
            "Suggest questions the data can answer",
        ],
        inputs={"request": "What to describe", "data_source_id": "Optional source"},
        outputs={"results": "Columns and their profile", "insights": "What the data holds"},
        examples=[
            "what data do we have?",
            "describe the columns of the demo data",
            "which questions can I ask about this table?",
            "what does each column mean?",
        ],
        default_timeout_ms=15000,
    )

    async def source(self, store: Store, task: TaskInput, context: AgentContext) -> DataContext:
        try:
            return await self._source(store, task)
        except Exception:
            if task.source:
                raise
            loaded = store.contexts()  # several loaded and none named: describe the latest, list them all
            if not loaded:
                raise
            return loaded[-1]

    def plan(self, work: Work) -> list[Planned]:
        source = work.source
        projections: list[exp.Expr] = [exp.alias_(exp.Count(this=exp.Star()), "rows")]
        time_column = source.semantic_profile.time_column
        if time_column:
            projections += [
                exp.alias_(exp.Min(this=sql.col(time_column)), "first"),
                exp.alias_(exp.Max(this=sql.col(time_column)), "last"),
            ]
        return [
            Planned(f"rows and time span of {source.name}", sql.select_from(source, *projections), "table", kind="span")
        ]

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        found = describe(work.source, executed)
        listing = store_for(self.settings, self.resources).contexts()
        if len(listing) > 1:
            found.findings.insert(
                0, "Loaded sources: " + ", ".join(f"{c.name} ({c.row_count:,} rows)" for c in listing)
            )
        return found

    def extra_results(self, work: Work) -> list[dict[str, Any]]:
        """One row per column: what the profile knows of it."""
        source = work.source
        out = []
        for column in source.columns:
            p = source.detected_types[column]
            out.append(
                {
                    "column": column,
                    "type": p.type,
                    "kind": p.role,
                    "nulls": p.nulls,
                    "distinct": p.distinct,
                    "min": p.min,
                    "max": p.max,
                    "samples": p.sample_values[:3],
                    "meaning": source.describe(column),
                }
            )
        return [
            {
                "purpose": f"columns of {source.name}",
                "data": out,
                "row_count": len(out),
                "columns": list(out[0]) if out else [],
                "chart": {"type": "table"},
            }
        ]
