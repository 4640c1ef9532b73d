"""What every commercial agent shares: choosing the source (the built-in commercial data set
unless `--source` names another), the brand filter, reading whole columns as a pandas frame,
the transparency events, and the seed's `agent_to_orchestrator` payload shape.

An agent implements `analyse(work) -> Answer` (synchronous, run in a worker thread: the
statistics are CPU work; or the async `answer(work)` when it awaits something) and raises
`AgentFailure` (or `errors.invalid`) for anything a user must change; a `MethodError` the
statistics raise becomes the contract's error here. Its `Answer.payload` holds
the seed's fields for that agent (for causal_impact: `ate`, `confidence_interval`,
`p_value`, `robustness_passed`, `interpretation`); the base adds `recommendations`,
`requires_further_analysis`, the source, the brand and the tables behind the answer.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentResult, FirstUse, Unanswered
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType
from concerto.data.sources import named_source, source_failure, store_for
from concerto.data.store import QueryFailed, SourceError
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.data import BRANDS, PANEL, first_use, load_commercial
from concerto.packs.commercial.base.errors import failure, invalid
from concerto.packs.commercial.methods.errors import MethodError

if TYPE_CHECKING:
    import pandas as pd

    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.data.context import DataContext
    from concerto.data.store import Store

Chart = Literal["bar", "line", "pie", "table", "scatter"]
MAX_ROWS = 5_000_000  # rows an analysis may read into memory


@dataclass
class Table:
    """Rows behind an answer, for the page's panels and `--format json`."""

    title: str
    rows: list[dict[str, Any]]
    chart: Chart = "table"
    x: str | None = None
    y: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "purpose": self.title,
            "data": self.rows,
            "row_count": len(self.rows),
            "columns": list(self.rows[0]) if self.rows else [],
            "chart": {"type": self.chart, "x": self.x, "y": self.y},
        }


@dataclass
class Answer:
    """One agent's answer: the seed's payload fields and what the orchestrator shows."""

    payload: dict[str, Any]
    summary: str
    key_findings: list[str] = field(default_factory=list)
    recommendations: list[str] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    requires_further_analysis: bool = False
    tables: list[Table] = field(default_factory=list)
    unanswered: list[Unanswered] = field(default_factory=list)
    entities: dict[str, Any] = field(default_factory=dict)


@dataclass
class Work:
    """One question's state: the request, its source and brand, and what earlier tasks found."""

    request: str
    payload: dict[str, Any]
    source: DataContext
    store: Store
    brand: str | None
    context: AgentContext
    previous: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what reading the data dropped or assumed

    @property
    def expertise(self) -> str:
        return self.context.query.user_expertise

    @property
    def output_format(self) -> str:
        return self.context.query.output_format

    def given(self, key: str) -> Any:
        """A payload input (`treatment`, `outcome`, ...) when the caller set it, else None."""
        value = self.payload.get(key)
        return None if value in (None, "", []) else value

    def column(self, role: str, phrase: str | None = None, *, default: str | None = None) -> str | None:
        """The column for `role`: the payload's `role` key, else the column `phrase` names, else
        `default` (when it is a column of the source)."""
        named = self.given(role)
        if named is not None:
            return cols.resolve(self.source, str(named), role)
        if phrase:
            found = cols.match_phrase(self.source, phrase)
            if found is not None:
                return found
        return default if default in self.source.detected_types else None

    def frame(self, columns: list[str], *, dropna: bool = True) -> pd.DataFrame:
        """The source's `columns` (plus the brand column when filtering) as a pandas frame,
        for the chosen brand; rows with a missing value in any of them are dropped and
        counted in `notes` when `dropna`."""
        wanted = list(dict.fromkeys(columns + (["brand"] if self.brand and "brand" in self.source.columns else [])))
        try:
            table = self.store.table(self.source, wanted, max_rows=MAX_ROWS)
        except SourceError as exc:
            raise AgentFailure(str(exc), error_type="unknown_column", kind=ErrorKind.VALIDATION) from None
        except QueryFailed as exc:
            raise AgentFailure(str(exc), error_type="query_failed", kind=ErrorKind.ERROR) from None
        df = table.to_pandas()
        if self.brand and "brand" in df.columns:
            df = df[df["brand"].str.lower() == self.brand.lower()]
            if "brand" not in columns:
                df = df.drop(columns="brand")
        if dropna:
            before = len(df)
            df = df.dropna(subset=columns)
            if len(df) < before:
                self.notes.append(f"{before - len(df):,} of {before:,} rows had a missing value and were left out")
        return df.reset_index(drop=True)

    def previous_findings(self) -> list[dict[str, Any]]:
        """Earlier tasks' agent, findings and output, oldest first (for explainer and the like)."""
        return [
            {
                "agent": item.get("agent"),
                "key_findings": list(item.get("key_findings") or []),
                "output": dict(item.get("result") or item.get("output") or {}),
            }
            for item in self.previous
        ]


class CommercialAgent(Agent):
    """Base of the nine commercial agents: subclasses set `info` and implement `analyse`."""

    default_source: ClassVar[str] = PANEL
    uses_data: ClassVar[bool] = True

    async def run(self, context: AgentContext, payload: dict[str, Any]) -> AgentResult:
        started = time.perf_counter()
        request = str(payload.get("request") or context.query.query)
        await context.emit(EventType.RECEIVED, "Received request", {"request": request[:100]}, step=1)
        store = store_for(context.settings, context.resources)
        source = await self._source(store, payload) if self.uses_data else None
        brand = self._brand(payload, context, request, source)
        work = Work(
            request=request,
            payload=payload,
            source=source,  # type: ignore[arg-type]  # agents with uses_data=False never read it
            store=store,
            brand=brand,
            context=context,
            previous=list(payload.get("previous_results") or []),
        )
        await context.emit(
            EventType.THINKING,
            "Reading the data",
            {"source": source.name if source else None, "brand": brand},
            step=2,
        )
        await context.emit(EventType.ACTION, "Estimating", {"method": self.info.name}, step=3)
        answer = await self.answer(work)
        await context.emit(EventType.RESULT, "Analysis complete", {"summary": answer.summary[:200]}, step=4)
        output = {
            **answer.payload,
            "recommendations": answer.recommendations,
            "requires_further_analysis": answer.requires_further_analysis,
            "source": source.name if source else None,
            "brand": brand,
            "notes": work.notes,
            "results": [t.as_dict() for t in answer.tables],
            "visualization_hint": answer.tables[0].chart if answer.tables else "table",
            "metadata": {"duration_ms": round((time.perf_counter() - started) * 1000, 1)},
        }
        return AgentResult(
            output=output,
            summary=answer.summary,
            key_findings=answer.key_findings,
            follow_up_questions=answer.follow_ups,
            entities={**({"brand": brand} if brand else {}), **answer.entities},
            unanswered=answer.unanswered,
        )

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        """The built-in data set, loaded before the task when the question names no source."""
        if not self.uses_data or named_source(query):
            return None
        try:
            return first_use(store_for(self.settings, self.resources), self.default_source)
        except (SourceError, QueryFailed):  # the database is down: the task says so
            return None

    async def answer(self, work: Work) -> Answer:
        """The answer: `analyse` in a worker thread (the statistics are CPU work), a method's
        error turned into the contract's. An agent that awaits something itself (the
        explainer's LLM) overrides this instead."""
        try:
            return await asyncio.to_thread(self.analyse, work)
        except MethodError as exc:
            raise failure(exc) from None

    def analyse(self, work: Work) -> Answer:
        """Answer the question from `work` (runs in a worker thread)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither analyse nor answer")

    async def _source(self, store: Store, payload: dict[str, Any]) -> DataContext:
        """The source named by `--source` / `data_source_id`, else the built-in data set."""
        name = payload.get("source") or payload.get("data_source_id")
        try:
            if name:
                return await asyncio.to_thread(store.context, str(name))
            return await asyncio.to_thread(load_commercial, store, self.default_source)
        except (SourceError, QueryFailed) as exc:
            raise source_failure(exc) from None

    def _brand(
        self, payload: dict[str, Any], context: AgentContext, request: str, source: DataContext | None
    ) -> str | None:
        """The brand to filter by: `--brand`, else one named in the question; checked against the
        source's brand column (or the three brands when the agent reads no data)."""
        given = payload.get("brand") or context.query.brand
        known = self._known_brands(source)
        if not given:
            lowered = request.lower()
            named = [b for b in known if b.lower() in lowered]
            return named[0] if len(named) == 1 else None
        match = next((b for b in known if b.lower() == str(given).strip().lower()), None)
        if match is None:
            if source is not None and "brand" not in source.columns:
                raise invalid(
                    f"the source {source.name} has no brand column, so it cannot be filtered to '{given}'",
                    "Leave out --brand, or choose a source with a brand column.",
                    error_type="unknown_brand",
                )
            raise invalid(
                f"unknown brand '{given}'",
                f"Choose one of: {', '.join(known)}",
                error_type="unknown_brand",
                brand=str(given),
            )
        return match

    @staticmethod
    def _known_brands(source: DataContext | None) -> list[str]:
        if source is not None and "brand" in source.detected_types:
            return [str(b) for b in source.detected_types["brand"].categories] or list(BRANDS)
        return list(BRANDS)
