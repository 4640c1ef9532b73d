"""The `kpi` agent (000_*.txt): answers KPI questions from the ChromaDB store.

It accepts the agreed format exactly (router step 1, `match_structured`) and, through
`prepare`, turns plain language into that format. `run` parses the format, queries the
store with metadata filters, and returns the records with the change, min/max and trend.
"""

from __future__ import annotations

import asyncio
from typing import Any

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult, Holdings
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType
from concerto.packs.kpi.formats import EXAMPLES, KPIQuery, looks_structured
from concerto.packs.kpi.interpret import MAX_REQUEST_CHARS, interpret, partial_format, too_long, unknown_name

NO_DATA = "No data found for specified period"


def _store(agent: Agent) -> Any:
    """The shared store, with the demo data loaded into it on first use."""
    from concerto.packs.kpi.store import get_store

    store = get_store(agent.settings, agent.resources)
    store.ensure_demo()
    return store


class KPIAgent(Agent):
    """Monthly business KPIs per department: one month or a range, with change and trend."""

    info = AgentInfo(
        name="kpi",
        pack="kpi",
        description=(
            "Looks up monthly business KPIs of a department (attrition rate, headcount, revenue, "
            "operating cost, customer satisfaction, NPS, handling time, absenteeism) for one "
            "month or a range of months, and reports the change, min/max and trend."
        ),
        capabilities=[
            "Report a department's KPI value for a given month",
            "Show how a KPI changed over the last N months, with min, max and trend",
            "Employee attrition, turnover, headcount and absenteeism per department",
            "Revenue, operating cost, customer satisfaction and NPS per business line",
            "Accepts the agreed query format kpi-{kpi} department-{department} month-{YYYY-MM-DD}",
        ],
        inputs={
            "query": "Agreed format, e.g. kpi-attrition-rate department-home-loan month-2025-05-01",
            "request": "Or a plain-language question, e.g. 'home-loan attrition rate last month'",
        },
        outputs={
            "structured_query": "The canonical agreed-format query that was run",
            "records": "kpi, department, month, value, unit, notes per month",
            "statistics": "For ranges: change, change_pct, min, max, mean, trend",
        },
        examples=[
            "home-loan attrition rate last month",
            "home-loan attrition rate previous 4 months",
            "What was the employee turnover in the home loan team for March 2025?",
            "credit card customer satisfaction from February to May 2025",
            "revenue of wealth management this year so far",
            EXAMPLES[0],
        ],
        default_timeout_ms=30000,
    )

    def holdings(self) -> Holdings | None:
        """The KPI and department names the store holds (read from a small file, not ChromaDB)."""
        from concerto.packs.kpi.held import held

        return held(self.settings.data_dir)

    def match_structured(self, text: str) -> dict[str, Any] | None:
        # An attempt at the format (starts with `kpi-`) is ours even when malformed, so the
        # user gets the spec's "proper format" message instead of a guess by another agent.
        return {"query": text.strip()} if looks_structured(text) else None

    async def prepare(self, request: str, context: AgentContext) -> dict[str, Any]:
        structured = self.match_structured(request)
        if structured is not None:
            return structured
        try:
            query, how = await asyncio.to_thread(self._interpret, request, context)
        except AgentFailure:
            return {"request": request}  # `run` repeats the conversion and reports the failure
        return {"query": query.to_text(), "request": request, "interpretation": how}

    def _interpret(self, request: str, context: AgentContext) -> tuple[KPIQuery, dict[str, Any]]:
        if len(request) > MAX_REQUEST_CHARS:
            raise too_long(request)
        store = _store(self)
        return interpret(request, context.now.date(), store.catalog(), self.resources.embedder)

    async def run(self, context: AgentContext, payload: dict[str, Any]) -> AgentResult:
        text = str(payload.get("query") or "")
        how = payload.get("interpretation")
        if not text:
            request = str(payload.get("request") or context.query.query)
            if looks_structured(request):
                text = request.strip()
            else:
                await context.emit(
                    EventType.THINKING,
                    "Converting the question to the KPI format",
                    {"request": request[:200]},
                    step=1,
                )
                query, how = await asyncio.to_thread(self._interpret, request, context)
                text = query.to_text()
        try:
            query = KPIQuery.parse(text)
        except AgentFailure:
            partial = partial_format(text, context.now.date())
            if partial is None:
                raise
            query = partial
        await context.emit(
            EventType.ACTION,
            "Querying the KPI store",
            {"structured_query": query.to_text()},
            step=2,
        )
        return await asyncio.to_thread(self._answer, query, how)

    def _answer(self, query: KPIQuery, how: dict[str, Any] | None) -> AgentResult:
        from concerto.packs.kpi.analysis import missing_months, statistics, summarize
        from concerto.packs.kpi.matching import closest

        store = _store(self)
        catalog = store.catalog()
        for kind, name in (("kpi", query.kpi), ("department", query.department)):
            if not catalog.has(kind, name):
                raise unknown_name(
                    kind,
                    name,
                    closest(name, kind, catalog, self.resources.embedder),
                    catalog.names(kind),
                )
        first, last = query.first_month, query.last_month
        records = store.query(query.kpi, query.department, first, last)
        base: dict[str, Any] = {
            "structured_query": query.to_text(),
            "kpi": query.kpi,
            "department": query.department,
            "period": {
                "start": first.first_day.isoformat(),
                "end": last.last_day.isoformat(),
                "months": (last.year - first.year) * 12 + last.month - first.month + 1,
            },
        }
        base["store"] = {
            "backend": store.backend,
            "collection": "kpi_records",
            "where": store.where(query.kpi, query.department, first, last),
            "months": [first.as_int(), last.as_int()],
        }
        if how:
            base["interpretation"] = how
        if not records:
            span = store.span(query.kpi, query.department)
            hint = f"Data exists from {span[0]} to {span[1]}." if span else None
            raise AgentFailure(
                NO_DATA,
                error_type="no_data",
                kind=ErrorKind.NOT_FOUND,
                suggestion=hint,
                output=base | {"records": []},
            )
        stats = statistics(records) if query.is_range else None
        out = base | {"unit": records[0].unit, "records": [r.as_dict() for r in records]}
        if stats is not None:
            out["statistics"] = stats
        gaps = missing_months(first, last, records)
        if gaps:
            out["missing_months"] = gaps
        summary = summarize(query.kpi, query.department, first, last, records, stats)
        findings = [summary] + ([f"No data for {len(gaps)} month(s) of the period."] if gaps else [])
        follow = [f"{query.department} {query.kpi.replace('-', ' ')} previous 12 months"]
        entities = {"kpi": query.kpi, "department": query.department, "structured_query": query.to_text()}
        return AgentResult(
            output=out, summary=summary, key_findings=findings, follow_up_questions=follow, entities=entities
        )
