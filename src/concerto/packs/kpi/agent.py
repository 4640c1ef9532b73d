"""The `kpi` agent (000_*.txt): answers KPI questions from the ChromaDB store.

It accepts the agreed format exactly (router step 1, `match_structured`) and, through
`prepare`, turns plain language into that format. `run` parses the format, queries the
store with metadata filters, and returns the records with the change, min/max and trend.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from concerto.agents.base import (
    Agent,
    AgentContext,
    AgentFailure,
    AgentInfo,
    AgentResult,
    FirstUse,
    Holdings,
    Unanswered,
)
from concerto.agents.task import TaskInput
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.packs.kpi.asks import Analysis
from concerto.packs.kpi.formats import EXAMPLES, KPIQuery, invalid_format, looks_structured
from concerto.packs.kpi.interpret import (
    MAX_REQUEST_CHARS,
    MAX_SERIES,
    Request,
    partial_format,
    read_request,
    too_long,
    unknown_name,
)
from concerto.packs.kpi.months import Month

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
            "Looks up monthly business KPIs of departments and teams (attrition rate, headcount, revenue, "
            "operating cost, customer satisfaction, NPS, handling time, absenteeism) for a month or a range "
            "of months: the change, min/max and trend; compares departments or KPIs, ranks the teams, "
            "and gives totals and averages over a period."
        ),
        capabilities=[
            "Report a department's KPI value for a given month",
            "Show how a KPI changed over the last N months, with min, max and trend",
            "Compare a KPI between departments or teams, or two KPIs of one department, with the difference",
            "Rank departments or teams by a KPI: which team is highest or lowest, best or worst, top or bottom N",
            "Which department had the biggest rise or fall of a KPI over a period",
            "Total or average of a KPI over a quarter, a half-year, a year or this year so far",
            "Employee attrition, turnover, headcount and absenteeism per department",
            "Revenue, operating cost, customer satisfaction and NPS per business line",
            "Accepts the agreed query format kpi-{kpi} department-{department} month-{YYYY-MM-DD}",
        ],
        inputs={
            "query": "Agreed format, e.g. kpi-attrition-rate department-home-loan month-2025-05-01",
            "queries": "Several agreed-format queries, compared or ranked as `analysis` says",
            "analysis": 'What to do with several queries, e.g. {"kind": "rank", "order": "lowest", "n": 3}',
            "request": "Or a plain-language question, e.g. 'home-loan attrition rate last month'",
        },
        outputs={
            "structured_query": "The canonical agreed-format query that was run (the first one, for several)",
            "structured_queries": "Every agreed-format query run, for a comparison or a ranking",
            "records": "kpi, department, month, value, unit, notes per month",
            "statistics": "For ranges: change, change_pct, min, max, mean, trend",
            "series": "For several queries: each series with its records, statistics and compared value",
            "comparison": "For a comparison: highest, lowest and the differences from the first series",
            "ranking": "For a ranking: the series (or months) in order, with their values",
        },
        examples=[
            "home-loan attrition rate last month",
            "home-loan attrition rate previous 4 months",
            "What was the employee turnover in the home loan team for March 2025?",
            "credit card customer satisfaction from February to May 2025",
            "revenue of wealth management this year so far",
            "compare attrition in home-loan and credit-card last 3 months",
            "Which team had the lowest NPS in April 2025?",
            "top 3 departments by revenue in 2024",
            EXAMPLES[0],
        ],
        default_timeout_ms=30000,
    )

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        """The demo records, loaded before the task into an empty embedded store (one that
        holds data has written its names file; a ChromaDB server's data is the user's)."""
        from concerto.packs.kpi.held import names_file
        from concerto.packs.kpi.settings import KPISettings

        if KPISettings.of(self.settings).chroma_url or names_file(self.settings.data_dir).exists():
            return None
        return FirstUse("kpi.demo", "the KPI demo records", 2.0, lambda: _store(self))

    def holdings(self) -> Holdings | None:
        """The KPI and department names the store holds (read from a small file, not ChromaDB)."""
        from concerto.packs.kpi.held import held

        return held(self.settings.data_dir)

    def match_structured(self, text: str) -> dict[str, Any] | None:
        # An attempt at the format (starts with `kpi-`) is ours even when malformed, so the
        # user gets the spec's "proper format" message instead of a guess by another agent.
        # Several agreed-format queries, one per line or separated by ";", are compared.
        if not looks_structured(text):
            return None
        parts = [p.strip() for p in re.split(r"[;\n]+", text) if p.strip()]
        if len(parts) > 1 and all(looks_structured(p) for p in parts):
            return {"queries": parts}
        return {"query": text.strip()}

    async def prepare(self, question: str, context: AgentContext) -> dict[str, Any]:
        structured = self.match_structured(question)
        if structured is not None:
            return structured
        try:
            asked = await asyncio.to_thread(self._read, question, context)
        except AgentFailure:
            return {}  # `run` repeats the conversion and reports the failure
        return _inputs(asked)

    def _read(self, request: str, context: AgentContext) -> Request:
        if len(request) > MAX_REQUEST_CHARS:
            raise too_long(request)
        store = _store(self)
        asked = read_request(request, context.now.date(), store.catalog(), self.resources.embedder)
        if asked.expanded:  # "revenue of every department": the departments that report revenue
            held = [q for q in asked.queries if store.span(q.kpi, q.department) is not None]
            asked.queries = held or asked.queries
        return asked

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        inputs = task.inputs
        if not inputs.get("query") and not inputs.get("queries"):
            question = task.question
            structured = self.match_structured(question)
            if structured is not None:
                inputs = inputs | structured
            else:
                await context.emit(
                    EventType.THINKING,
                    "Converting the question to the KPI format",
                    {"request": question[:200]},
                    step=1,
                )
                inputs = inputs | _inputs(await asyncio.to_thread(self._read, question, context))
        queries = [self._parse(str(q), context) for q in _texts(inputs)]
        analysis = _analysis(inputs.get("analysis"))
        unanswered = [Unanswered.model_validate(u) for u in inputs.get("unanswered") or []]
        await context.emit(
            EventType.ACTION,
            "Querying the KPI store",
            {"structured_query": queries[0].to_text()}
            if len(queries) == 1
            else {"structured_queries": [q.to_text() for q in queries]},
            step=2,
        )
        how = inputs.get("interpretation")
        if len(queries) == 1 and analysis == Analysis():
            return await asyncio.to_thread(self._answer, queries[0], how, unanswered)
        return await asyncio.to_thread(self._answer_many, queries, analysis, how, unanswered)

    @staticmethod
    def _parse(text: str, context: AgentContext) -> KPIQuery:
        try:
            return KPIQuery.parse(text)
        except AgentFailure:
            partial = partial_format(text, context.now.date())
            if partial is None:
                raise
            return partial

    def _check_names(self, store: Any, queries: list[KPIQuery]) -> None:
        from concerto.packs.kpi.matching import closest

        catalog = store.catalog()
        for query in queries:
            for kind, name in (("kpi", query.kpi), ("department", query.department)):
                if not catalog.has(kind, name):
                    raise unknown_name(
                        kind,
                        name,
                        closest(name, kind, catalog, self.resources.embedder),
                        catalog.names(kind),
                    )

    def _answer(self, query: KPIQuery, how: dict[str, Any] | None, unanswered: list[Unanswered]) -> AgentResult:
        from concerto.packs.kpi.analysis import statistics, summarize
        from concerto.packs.kpi.compare import Series, gaps

        store = _store(self)
        self._check_names(store, [query])
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
            raise AgentFailure(
                _no_data([query], {(query.kpi, query.department): span}, how),
                error_type="no_data",
                kind=ErrorKind.NOT_FOUND,
                suggestion=f"Data exists from {span[0]} to {span[1]}." if span else _ASK_HELD,
                details=_held_details({(query.kpi, query.department): span}),
                output=base | {"records": []},
            )
        stats = statistics(records) if query.is_range else None
        out = base | {"unit": records[0].unit, "records": [r.as_dict() for r in records]}
        if stats is not None:
            out["statistics"] = stats
        series = Series(query, records)
        missing = series.missing()
        if missing:
            out["missing_months"] = [m.first_day.isoformat() for m in missing]
            unanswered = unanswered + gaps(
                [series], {(query.kpi, query.department): store.span(query.kpi, query.department)}
            )
        summary = summarize(query.kpi, query.department, first, last, records, stats)
        findings = [summary]
        note = _assumed(how, first)
        if note:
            summary = f"{note} {summary}"
            findings.insert(0, note)
        follow = [f"{query.department} {query.kpi.replace('-', ' ')} previous 12 months"]
        entities = {"kpi": query.kpi, "department": query.department, "structured_query": query.to_text()}
        return AgentResult(
            output=out,
            summary=summary,
            key_findings=findings,
            follow_up_questions=follow,
            entities=entities,
            unanswered=unanswered,
        )

    def _answer_many(
        self,
        queries: list[KPIQuery],
        analysis: Analysis,
        how: dict[str, Any] | None,
        unanswered: list[Unanswered],
    ) -> AgentResult:
        """Several series: each queried, then compared, ranked or totalled (see compare.py)."""
        from concerto.packs.kpi.compare import Series, combine, gaps

        store = _store(self)
        self._check_names(store, queries)
        found = store.query_many([(q.kpi, q.department, q.first_month, q.last_month) for q in queries])
        series = [Series(q, records) for q, records in zip(queries, found, strict=True)]
        texts = [q.to_text() for q in queries]
        if not any(s.records for s in series):
            named = list(dict.fromkeys((q.kpi, q.department) for q in queries))[:_HELD_SHOWN]
            spans = {key: store.span(*key) for key in named}
            raise AgentFailure(
                _no_data(queries, spans, how),
                error_type="no_data",
                kind=ErrorKind.NOT_FOUND,
                suggestion=_ASK_HELD,
                details=_held_details(spans),
                output={"structured_queries": texts, "records": []},
            )
        keys = {(q.kpi, q.department) for q in queries}
        spans = {
            key: store.span(*key)
            for key in keys
            if any(s.missing() for s in series if (s.query.kpi, s.query.department) == key)
        }
        combined = combine(series, analysis)
        note = _assumed(how, queries[0].first_month)
        if note:
            combined.summary = f"{note} {combined.summary}"
            combined.findings.insert(0, note)
        out: dict[str, Any] = {
            "structured_queries": texts,
            "structured_query": texts[0],
            "kpis": list(dict.fromkeys(q.kpi for q in queries)),
            "departments": list(dict.fromkeys(q.department for q in queries)),
            **combined.output,
            "records": [r.as_dict() for s in series for r in s.records],
        }
        if how:
            out["interpretation"] = how
        entities = {
            "kpi": out["kpis"][0] if len(out["kpis"]) == 1 else out["kpis"],
            "department": out["departments"][0] if len(out["departments"]) == 1 else out["departments"],
            "structured_query": texts,
        }
        follow = [f"{q.department} {q.kpi.replace('-', ' ')} previous 12 months" for q in queries[:2]]
        return AgentResult(
            output=out,
            summary=combined.summary,
            key_findings=combined.findings,
            follow_up_questions=follow,
            entities=entities,
            unanswered=unanswered + gaps(series, spans),
        )


_ASK_HELD = "Ask for a period the store holds; `concerto kpi names` lists the KPIs and departments."
_HELD_SHOWN = 5  # series whose held months a no-data error names (each is one store read)


def _assumed(how: dict[str, Any] | None, month: Month) -> str | None:
    """The words that say the period was not given but assumed (000's default: last month)."""
    if how and how.get("period_assumed"):
        return f"No period was named, so this is last month, {month.name}."
    return None


def _no_data(
    queries: list[KPIQuery], spans: dict[tuple[str, str], tuple[Month, Month] | None], how: dict[str, Any] | None
) -> str:
    """000's "No data found for specified period", naming the period asked and what the store holds."""
    from concerto.packs.kpi.analysis import label
    from concerto.packs.kpi.months import period_phrase

    asked = list(dict.fromkeys(period_phrase(q.first_month, q.last_month) for q in queries))
    series = list(dict.fromkeys(label(q.kpi, q.department).lower() for q in queries))
    more = len(series) - _HELD_SHOWN
    shown = ", ".join(series[:_HELD_SHOWN]) + (f" and {more} more" if more > 0 else "")
    text = f"{NO_DATA}: {shown} {' and '.join(asked)}"
    if how and how.get("period_assumed"):
        text += " (no period was named, so last month was asked)"
    held = [
        f"{label(k, d).lower()} from {span[0].name} to {span[1].name}" if span else f"no {label(k, d).lower()} records"
        for (k, d), span in spans.items()
    ]
    return f"{text}. The store holds {'; '.join(held)}." if held else f"{text}."


def _held_details(spans: dict[tuple[str, str], tuple[Month, Month] | None]) -> dict[str, Any]:
    return {
        "held": [
            {"kpi": k, "department": d, "first": str(span[0]) if span else None, "last": str(span[1]) if span else None}
            for (k, d), span in spans.items()
        ]
    }


def _inputs(asked: Request) -> dict[str, Any]:
    """The agent's inputs for a read question: the agreed-format queries and the analysis."""
    out: dict[str, Any] = {"interpretation": asked.interpretation}
    if asked.single:
        out["query"] = asked.queries[0].to_text()
    else:
        out["queries"] = [q.to_text() for q in asked.queries]
        out["analysis"] = asked.analysis.model_dump(exclude_defaults=True)
    if asked.unanswered:
        out["unanswered"] = [u.model_dump(exclude_defaults=True) for u in asked.unanswered]
    return out


def _texts(inputs: dict[str, Any]) -> list[str]:
    queries = inputs.get("queries")
    if queries:
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise invalid_format(str(queries)[:200], "`queries` must be a list of agreed-format strings")
        if len(queries) > MAX_SERIES:
            raise invalid_format(f"{len(queries)} queries", f"at most {MAX_SERIES} queries in one request")
        return queries
    return [str(inputs.get("query") or "")]


def _analysis(value: Any) -> Analysis:
    try:
        return Analysis.model_validate(value or {})
    except ValueError as exc:
        raise AgentFailure(
            f"Invalid KPI analysis {value!r}: {exc}"[:500],
            error_type="invalid_format",
            kind=ErrorKind.VALIDATION,
            suggestion='e.g. {"kind": "rank", "order": "lowest", "n": 3} or {"kind": "compare"}',
        ) from None
