"""What every analytics agent shares (004_*.txt's SQL Analytics pattern): the flow with its
six transparency events, the data context, reading the question, running the planned
queries through the store's safety check, and the spec's response structure.

An agent is `plan()` (the queries its question types need, as sqlglot expressions) and
`insights()` (findings computed from the results, with the numbers they rest on).
"""

from __future__ import annotations

import asyncio
import re
import time
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sqlglot import exp

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentResult, FirstUse, Holdings, Unanswered
from concerto.agents.task import PriorResult, TaskInput
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType
from concerto.contracts.reading import TableReading
from concerto.data.safety import UnsafeQuery
from concerto.data.sources import choose, demo_first_use, source_failure, store_for
from concerto.data.store import QueryFailed, QueryResult, SourceError, Store
from concerto.nlp.terms import words
from concerto.packs.analytics.reading import Reading, read

if TYPE_CHECKING:
    from concerto.contracts.orchestrator import OrchestratorInput
    from concerto.data.context import DataContext

Chart = Literal["bar", "line", "pie", "table", "scatter"]


@dataclass
class Planned:
    """One query an agent means to run, and what it answers."""

    purpose: str
    query: exp.Query
    chart: Chart = "table"
    x: str | None = None
    y: list[str] = field(default_factory=list)
    kind: str = ""  # which of the agent's query types
    series: str | None = None  # a column splitting the chart into one line or bar group per value
    sql_text: str | None = None  # SQL written by an LLM: checked as text by the store (`query` is unused)


@dataclass
class Executed:
    planned: Planned
    result: QueryResult | None = None
    error: str | None = None


@dataclass
class Insights:
    summary: str
    findings: list[str] = field(default_factory=list)
    insights: list[str] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Kind:
    """One of an agent's query types (004's "Query Types to Generate"), described in words the
    question is compared with."""

    name: str
    description: str


@dataclass(frozen=True)
class Segments:
    """Value tiers an earlier task defined (segmentation's output `segments`), for a later task to
    break its own answer down by: entity → High / Medium / Low by the same bounds."""

    source: str
    measure: str
    high_bound: float
    low_bound: float

    @classmethod
    def from_previous(cls, previous: list[PriorResult], source: str) -> Segments | None:
        for item in previous:
            spec = item.result.get("segments")
            if isinstance(spec, dict) and spec.get("source") == source:
                try:
                    return cls(source, str(spec["measure"]), float(spec["high_bound"]), float(spec["low_bound"]))
                except (KeyError, TypeError, ValueError):
                    continue
        return None


# "over 200", "at least $15k", "less than 1,000", "between 5 and 9": a condition on a number
_NUMBER_CONDITION = re.compile(
    r"\b(?:over|above|under|below|more than|less than|fewer than|greater than|at least|at most|"
    r"between)\s+\$?\d[\d,.]*\s*[kKmM%]?(?:\s+and\s+\$?\d[\d,.]*)?",
    re.I,
)


@dataclass
class Work:
    """One question's state, passed to `plan` and `insights`."""

    request: str
    source: DataContext
    reading: Reading
    previous: list[PriorResult]
    context: AgentContext
    values: dict[str, list[object]]
    store: Store | None = None
    before: list[Executed] = field(default_factory=list)  # queries run while planning (fetch, then reason)
    table_reading: TableReading | None = None  # the question read against this source (`TaskInput.reading`)

    @property
    def segments(self) -> Segments | None:
        """Tiers from an earlier task of the plan ("segment ..., then ... of each segment")."""
        return Segments.from_previous(self.previous, self.source.name)


class AnalyticsAgent(Agent):
    """Base of the analytics agents: subclasses set `info` and implement `plan` and `insights`."""

    needs_values: ClassVar[bool] = True
    llm_planning: ClassVar[bool] = True  # with an LLM configured, the model plans the queries (llm_plan.py)

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        started = time.perf_counter()
        request = task.question
        await context.emit(EventType.RECEIVED, "Received request", {"request": request[:100]}, step=1)
        await context.emit(EventType.THINKING, "Loading data context", {}, step=2)
        store = store_for(context.settings, context.resources)
        source = await self.source(store, task, context)
        values = await self._values(store, source) if self.needs_values else {}
        table_reading = task.reading if task.reading is not None and task.reading.source == source.name else None
        # The question's meaning against the measures' descriptions (a MiniLM pass) is for
        # choosing a measure; an answer from the table reading needs none.
        similar = (
            {} if self.reading_answers(table_reading) else await asyncio.to_thread(self._similarity, request, source)
        )
        reading = read(request, source, values, similar=similar)
        work = Work(request, source, reading, task.previous, context, values, store, table_reading=table_reading)
        await context.emit(
            EventType.THINKING,
            "Analyzing and planning",
            {"source": source.name, "measures": reading.measures, "dimensions": reading.dimensions},
            step=3,
        )
        llm_run = await self._with_llm(work, store) if context.llm is not None and self.llm_planning else None
        if llm_run is not None:
            executed, found = llm_run
        else:
            planned = await self.plan_steps(work)
            await context.emit(EventType.ACTION, "Executing queries", {"count": len(planned)}, step=4)
            executed = work.before + [await self._execute(store, source, p, context) for p in planned]
            done = [e for e in executed if e.result is not None]
            if planned and not done:
                raise AgentFailure(
                    "None of the queries could run: " + "; ".join(e.error or "" for e in executed),
                    error_type="query_failed",
                    kind=ErrorKind.ERROR,
                )
            await context.emit(EventType.THINKING, "Synthesizing insights", {}, step=5)
            found = self.insights(work, executed)
        await context.emit(EventType.RESULT, "Analysis complete", {"summary": found.summary[:200]}, step=6)
        return AgentResult(
            output=self._output(work, executed, found, started),
            summary=found.summary,
            key_findings=found.findings,
            follow_up_questions=found.follow_ups,
            entities=self._entities(work),
            unanswered=(gaps := self.unanswered(work)),
            answer_values=None if gaps else self.answer_values(work, executed),  # not values that look whole
        )

    @staticmethod
    def reading_answers(reading: TableReading | None) -> bool:
        """Whether this agent answers `reading` as read (one query from it), rather than planning
        its own queries; the default: no."""
        return False

    def answer_values(self, work: Work, executed: list[Executed]) -> list[object] | None:
        """The answer's values when the question asks for specific ones (a count, a total, the
        names of the top N); None (the default) when the answer is an analysis."""
        return None

    def unanswered(self, work: Work) -> list[Unanswered]:
        """Parts of the question the answer leaves out: a condition on a number ("amount over
        200", which the reading does not apply yet), a breakdown ("by planet") or a place
        named with a column ("in the Atlantis region") that nothing in the source explains.

        Only words in those places count: elsewhere an unexplained word is as often plain
        English ("heaviest", "among") as a missing part, and a false "not answered" would be
        as misleading as a silent one.
        """
        numeric = [
            Unanswered(
                part=f"'{m.group(0).strip()}'",
                reason="not applied: a condition on a number is not read yet, so the answer covers every row",
                error_type="condition_not_applied",
                suggestion="Ask without the condition, or load the rows it selects as their own source.",
            )
            for m in _NUMBER_CONDITION.finditer(work.request)
        ]
        if work.table_reading is not None:  # the reading knows which numbers it could not place
            numeric = [
                Unanswered(
                    part=f"'{w.words}'",
                    reason="not applied: no column of the source fits it, so the answer covers every row",
                    error_type="condition_not_applied",
                    suggestion="Name the column it is about, or ask without it.",
                )
                for w in work.table_reading.conditions_missed
                if w.kind in ("number", "comparison", "date", "value")
            ]
        unknown = set(self.unexplained(work))
        if not unknown:
            return numeric
        text = " ".join(words(work.request))
        columns = {w for c in work.source.columns for w in c.lower().split("_")}
        categories = {
            w
            for c in work.source.columns
            if work.source.detected_types[c].role in ("category", "label")
            for w in c.lower().split("_")
        }
        parts: list[tuple[str, str]] = []
        grouped = r"\b(?:by|per|for each|for every|across)\s+(?:the\s+)?([a-z][a-z'-]*)(?:\s+([a-z]+))?"
        for m in re.finditer(grouped, text):
            if m.group(1) in unknown and (m.group(2) or "").rstrip("s") not in columns:
                parts.append(
                    (f"by {m.group(1)}", "no column of the source matches it, so the answer is not broken down by it")
                )
        for m in re.finditer(r"\b([a-z][a-z-]*)(?=\s+([a-z]+)\b)", text):
            if m.group(1) in unknown and m.group(2).rstrip("s") in categories:
                parts.append(
                    (
                        f"{m.group(1)} {m.group(2)}",
                        f"no {m.group(2)} called '{m.group(1)}' in the source, so the answer covers every {m.group(2)}",
                    )
                )
        return numeric + [
            Unanswered(
                part=f"'{part}'",
                reason=f"{reason} (source '{work.source.name}')",
                error_type="unknown_term",
                suggestion=f"Its columns: {', '.join(work.source.columns[:10])}.",
            )
            for part, reason in dict(parts).items()
        ]

    # -- what subclasses provide -----------------------------------------------------------

    def plan(self, work: Work) -> list[Planned]:
        """The queries answering `work.request`; raise `AgentFailure` when none can. Agents that
        need data before they can plan override `plan_steps` instead (then this is unused)."""
        return []

    async def plan_steps(self, work: Work) -> list[Planned]:
        """`plan`, for agents whose plan needs data first (fetch, reason, then query): those
        override this, run their first queries with `run_query` (kept in `work.before`)."""
        return self.plan(work)

    async def _with_llm(self, work: Work, store: Store) -> tuple[list[Executed], Insights] | None:
        """Plan, run (correcting failed queries) and interpret with the LLM; None, with a note
        saying why, when the model gives nothing that runs (the deterministic plan answers)."""
        from concerto.llm.base import LLMError
        from concerto.packs.analytics import llm_plan

        context = work.context
        role = f"{self.info.name} agent ({self.info.description})"
        kinds = [Kind(f"type {i + 1}", text) for i, text in enumerate(self.info.capabilities)]
        try:
            written = await llm_plan.plan_queries(work, role, kinds, store.dialect)
        except LLMError as exc:
            work.reading.notes.append(f"the LLM could not plan ({exc}); used the deterministic plan")
            return None
        # The SQL text is what the store checks and runs; `query` only stands in for it.
        stand_in = exp.select(exp.Literal.string("written by the LLM")).limit(0)
        planned = [Planned(q.purpose, stand_in, q.visualization_hint, q.x, q.y, "llm", sql_text=q.sql) for q in written]
        await context.emit(EventType.ACTION, "Executing queries", {"count": len(planned), "by": "llm"}, step=4)
        executed = []
        for p in planned:
            done = await self._execute(store, work.source, p, context)
            for attempt in range(llm_plan.MAX_CORRECTIONS):
                if done.result is not None or done.error is None:
                    break
                fixed = await llm_plan.correct(work, p.sql_text or "", done.error, store.dialect)
                if not fixed:
                    break
                await context.emit(
                    EventType.THINKING, f"Correcting a query (attempt {attempt + 1})", {"error": done.error[:200]}, 4
                )
                p = Planned(p.purpose, p.query, p.chart, p.x, p.y, "llm", p.series, fixed)
                done = await self._execute(store, work.source, p, context)
            executed.append(done)
        if not any(e.result is not None for e in executed):
            work.reading.notes.append(
                "no query the LLM wrote could run ("
                + "; ".join(e.error or "" for e in executed)[:300]
                + "); used the deterministic plan"
            )
            return None
        await context.emit(EventType.THINKING, "Synthesizing insights", {"by": "llm"}, step=5)
        computed = _computed_findings(executed)
        try:
            said = await llm_plan.interpret(work, role, [_shown(e) for e in executed if e.result is not None])
            found = Insights(said.summary, said.findings + computed, said.insights)
        except LLMError as exc:
            work.reading.notes.append(f"the LLM could not interpret the results ({exc})")
            found = Insights(computed[0] if computed else "The queries ran.", computed)
        return executed, found

    async def run_query(self, work: Work, planned: Planned) -> Executed:
        """Run one query while planning; it is reported with the others."""
        assert work.store is not None
        done = await self._execute(work.store, work.source, planned, work.context)
        work.before.append(done)
        return done

    @abstractmethod
    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        """Findings computed from the results, worded with their numbers."""

    def extra_output(self, work: Work, executed: list[Executed]) -> dict[str, Any]:
        """Fields beyond the spec's structure that later tasks of a plan can use (e.g. `segments`)."""
        return {}

    def extra_results(self, work: Work) -> list[dict[str, Any]]:
        """Results that are not query rows (e.g. a source's column profile), in the spec's shape."""
        return []

    def measure(self, work: Work) -> str:
        """The measure the question names, else the source's main one; a failure when it has none."""
        from concerto.packs.analytics.reading import default_measure

        found = work.reading.measure or default_measure(work.source)
        if found is None:
            raise AgentFailure(
                f"The source '{work.source.name}' has no numeric column to analyze; its columns are "
                f"{', '.join(work.source.columns)}.",
                error_type="no_measure",
                kind=ErrorKind.VALIDATION,
            )
        if not work.reading.measure:
            # Only an aggregate ("average X") says the unexplained words name a measure; verbs and
            # the agent's own vocabulary are explained, or not asked about.
            strange = self.unexplained(work) if work.reading.aggregate not in (None, "count") else []
            if strange:
                raise AgentFailure(
                    f"The source '{work.source.name}' has no column for '{' '.join(strange)}'. "
                    f"Its columns are: {', '.join(work.source.columns)}.",
                    error_type="unknown_column",
                    kind=ErrorKind.VALIDATION,
                    suggestion="Ask about one of: "
                    + ", ".join(work.source.columns_with("money", "measure") or work.source.columns),
                    details={"unknown": strange, "columns": work.source.columns},
                )
            work.reading.notes.append(f"no measure named; used {found}")
        return found

    def unexplained(self, work: Work) -> list[str]:
        """Words of the question that neither the source (columns, values, descriptions) nor this
        agent's own declaration explains: a measure the source does not have ("temperature")."""
        from concerto.nlp.terms import NEAR, stem, word_score, words

        info = self.info
        vocabulary = {stem(w) for text in (info.description, *info.capabilities, *info.examples) for w in words(text)}
        known = sorted(vocabulary)
        return [
            t
            for t in work.reading.unknown_terms
            if stem(t) not in vocabulary
            and word_score(stem(t), known) < NEAR
            and not any(t.startswith(k) for k in known if len(k) >= 4)  # "churning": churn
        ]

    def concept(self, work: Work, meaning: str, *, exclude: tuple[str, ...] = (), floor: float = 0.3) -> str | None:
        """The numeric column whose description is closest in meaning to `meaning` (e.g. "how
        engaged or active the customer is"), when it is close enough; the question's own
        measures are tried first. The choice and its score go into the reading's notes."""
        columns = [c for c in work.source.columns_with("money", "measure") if c not in exclude]
        if not columns:
            return None
        vectors = self.resources.embedder.embed([meaning, *(work.source.describe(c) for c in columns)])
        scores = {c: float(vectors[0] @ vectors[i + 1]) for i, c in enumerate(columns)}
        best = max(columns, key=lambda c: scores[c])
        if scores[best] < floor:
            work.reading.notes.append(f"no column means '{meaning}' (closest: {best} {scores[best]:.2f})")
            return None
        work.reading.notes.append(f"'{meaning}': {best} ({scores[best]:.2f})")
        return best

    def choose(self, work: Work, kinds: list[Kind], *, most: int = 2) -> list[Kind]:
        """The query types closest in meaning to the question (embeddings, no keyword lists):
        the best one, and the next ones that are nearly as close."""
        # What is asked of the data, not what the data is about: its columns and values masked.
        from concerto.nlp.terms import masked

        named = [*work.reading.named_columns, *(str(v) for f in work.reading.filters for v in f.values)]
        named += [work.source.semantic_profile.entity_name, work.source.name]
        asked = masked(work.request, [n.replace("_", " ") for n in named])
        vectors = self.resources.embedder.embed([asked, *(k.description for k in kinds)])
        scores = [float(vectors[0] @ vectors[i + 1]) for i in range(len(kinds))]
        order = sorted(range(len(kinds)), key=lambda i: -scores[i])
        best = scores[order[0]]
        chosen = [kinds[i] for i in order[:most] if scores[i] >= best - 0.06]
        work.reading.notes.append(
            "query types: " + ", ".join(f"{kinds[i].name} {scores[i]:.2f}" for i in order[: max(most, 3)])
        )
        return chosen

    # -- what the router sees ----------------------------------------------------------------

    def holdings(self) -> Holdings | None:
        """The loaded sources' names, columns and category values (the demo's before it loads).
        Sources another pack ships (`built_in`: the commercial data set) are that pack's to
        route to; a question reaches them here only by naming them with `--source`."""
        try:
            contexts = store_for(self.settings, self.resources).contexts()
        except (QueryFailed, SourceError):
            return None
        mine = [c for c in contexts if c.built_in is None]
        # Once per version of the loaded sources, for all the analytics agents: routing asks
        # each of them on every question, and a wide table has thousands of terms.
        cached: Holdings | None = self.resources.get(_HOLDINGS, lambda: None)
        if cached is None or cached.key != _holdings_key(mine):
            cached = holdings_of(mine)
            self.resources.put(_HOLDINGS, cached)
        return cached

    def first_use(self, query: OrchestratorInput | None = None) -> FirstUse | None:
        """The demo table, loaded before the task when the question will be about it."""
        try:
            return demo_first_use(store_for(self.settings, self.resources), query)
        except (QueryFailed, SourceError):  # the database is down: the task says so
            return None

    # -- shared steps ----------------------------------------------------------------------

    async def source(self, store: Store, task: TaskInput, context: AgentContext) -> DataContext:
        """The source the question is about (`data_ingestion` loads it first)."""
        return await self._source(store, task)

    async def _source(self, store: Store, task: TaskInput) -> DataContext:
        name = task.source
        try:
            return await asyncio.to_thread(choose, store, name)
        except SourceError as exc:
            named = None if name else _named_source(store.contexts(), task.question)
            if named is not None:
                return named
            raise source_failure(exc) from None
        except QueryFailed as exc:  # the database itself (PostgreSQL down)
            raise source_failure(exc) from None

    async def _values(self, store: Store, source: DataContext) -> dict[str, list[object]]:
        """Distinct values of the category and label columns: from the source's table values,
        fetched once per source version and shared with the question's reader (`table_for`)."""
        from concerto.packs.analytics.table.values import table_for

        table = await asyncio.to_thread(table_for, store, source, self.resources)
        return {c: v for c, v in table.values.items() if source.detected_types[c].role in ("category", "label")}

    def _similarity(self, request: str, source: DataContext) -> dict[str, float]:
        """Cosine similarity of the question to each measure column's description."""
        measures = [c for c in source.columns if source.detected_types[c].role in ("money", "measure")]
        if not measures:
            return {}
        embedder = self.resources.embedder
        vectors = embedder.embed([request, *(source.describe(c) for c in measures)])
        return {c: float(vectors[0] @ vectors[i + 1]) for i, c in enumerate(measures)}

    async def _execute(self, store: Store, source: DataContext, planned: Planned, context: AgentContext) -> Executed:
        try:
            result = await asyncio.to_thread(store.query, source, planned.sql_text or planned.query)
            return Executed(planned, result)
        except (UnsafeQuery, QueryFailed, SourceError) as exc:
            await context.emit(
                EventType.ERROR, f"Query refused or failed: {exc}"[:200], {"purpose": planned.purpose}, step=99
            )
            return Executed(planned, error=str(exc))

    def _output(self, work: Work, executed: list[Executed], found: Insights, started: float) -> dict[str, Any]:
        """The spec's AGENT RESPONSE STRUCTURE, with a declarative chart per result."""
        results = []
        for e in executed:
            entry: dict[str, Any] = {"purpose": e.planned.purpose}
            if e.result is not None:
                entry |= {
                    "data": e.result.data,
                    "row_count": e.result.row_count,
                    "columns": e.result.columns,
                    "truncated": e.result.truncated,
                    "chart": _chart(e.planned, e.result),
                }
            else:
                entry |= {"data": [], "row_count": 0, "error": e.error}
            results.append(entry)
        results += self.extra_results(work)
        first = next((e for e in executed if e.result is not None), None)
        hint = first.planned.chart if first else "table"
        return {
            **self.extra_output(work, executed),
            "source": work.source.name,
            "results": results,
            "insights": {
                "summary": found.summary,
                "findings": found.findings,
                "insights": found.insights,
                "visualization_hint": hint,
            },
            "queries_executed": [
                {
                    "sql": e.result.sql if e.result else (e.planned.sql_text or e.planned.query.sql()),
                    "purpose": e.planned.purpose,
                    **({"error": e.error} if e.error else {}),
                }
                for e in executed
            ],
            "visualization_hint": hint,
            "metadata": {
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                "queries_run": sum(1 for e in executed if e.result is not None),
                "total_rows": sum(e.result.row_count for e in executed if e.result is not None),
            },
            "reading": {
                "measures": work.reading.measures,
                "dimensions": work.reading.dimensions,
                "filters": {f.column: f.values for f in work.reading.filters},
                "period": work.reading.period.text if work.reading.period else None,
                "notes": work.reading.notes,
                # the question read against this table once, before routing (`TaskInput.reading`)
                **({"table": work.table_reading.model_dump(mode="json")} if work.table_reading else {}),
            },
        }

    def _entities(self, work: Work) -> dict[str, Any]:
        entities: dict[str, Any] = {"source": work.source.name}
        if work.reading.measures:
            entities["measure"] = work.reading.measures[0]
        if work.reading.dimensions:
            entities["dimension"] = work.reading.dimensions[0]
        return entities


def _named_source(contexts: list[DataContext], question: str) -> DataContext | None:
    """With several sources loaded and none chosen: the one source whose name, columns or values
    the question names most (a tie is no choice: the error then asks which)."""
    from concerto.nlp.terms import named, stems

    asked = stems(question)
    scores = [(sum(named(asked, t) for t in holdings_of([c]).terms), c) for c in contexts]
    scores.sort(key=lambda pair: -pair[0])
    if not scores or scores[0][0] == 0 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
        return None
    return scores[0][1]


def _shown(e: Executed) -> dict[str, Any]:
    assert e.result is not None
    return {"purpose": e.planned.purpose, "row_count": e.result.row_count, "data": e.result.data}


def _computed_findings(executed: list[Executed]) -> list[str]:
    """What any result says without interpretation: its size and its first row, with the numbers."""
    from concerto.packs.analytics import words

    out = []
    for e in executed:
        if e.result is None:
            out.append(f"{e.planned.purpose}: the query could not run ({(e.error or '')[:120]})")
            continue
        first = e.result.data[0] if e.result.data else {}
        shown = ", ".join(f"{k} {words.number(v)}" for k, v in list(first.items())[:5])
        out.append(f"{e.planned.purpose}: {e.result.row_count} row(s)" + (f"; first: {shown}" if shown else ""))
    return out


# Single words too common to say a question is about the data ("what's the date").
_GENERIC = frozenset(
    "id name date time type value code key status number amount total count day week month quarter year period".split()
)


_HOLDINGS = "analytics.holdings"
_DEMO_UNLOADED = "demo-unloaded"


def _holdings_key(contexts: list[DataContext]) -> str:
    return ",".join(c.data_source_id for c in contexts) or _DEMO_UNLOADED


def holdings_of(contexts: list[DataContext]) -> Holdings:
    """Terms a question may name to mean the loaded data; the demo's, when nothing is loaded."""
    if not contexts:
        from concerto.data.demo import DEMO_PROFILE, INDUSTRIES, REGIONS, SEGMENTS

        columns = list(DEMO_PROFILE["field_descriptions"])
        return Holdings(_DEMO_UNLOADED, _terms(["demo", "customer", *columns, *INDUSTRIES, *REGIONS, *SEGMENTS]))
    terms: list[str] = []
    for c in contexts:
        terms += [c.name, c.semantic_profile.entity_name, *c.columns]
        terms += [str(v) for p in c.detected_types.values() for v in p.categories]
    return Holdings(_holdings_key(contexts), _terms(terms))


def _terms(names: list[str]) -> tuple[str, ...]:
    """The distinct terms of `names`, in order (one pass: a wide table has thousands)."""
    from concerto.nlp.terms import words

    out: dict[str, None] = {}
    for name in names:
        parts = words(name.replace("_", " "))
        # "flipper length mm" is also named as "flipper length": a short last word is a unit.
        variants = [parts, parts[:-1]] if len(parts) > 1 and len(parts[-1]) <= 3 else [parts]
        for variant in variants:
            term = " ".join(variant)
            if term and not (" " not in term and (term in _GENERIC or len(term) < 3)):
                out[term] = None
    return tuple(out)


def _chart(planned: Planned, result: QueryResult) -> dict[str, Any]:
    """A declarative chart over the result's own columns; a table when the columns do not fit."""
    x = planned.x if planned.x in result.columns else None
    y = [c for c in planned.y if c in result.columns]
    if planned.chart == "table" or x is None or not y:
        return {"type": "table", "columns": result.columns}
    chart: dict[str, Any] = {"type": planned.chart, "x": x, "y": y}
    if planned.series in result.columns:
        chart["series"] = planned.series
    return chart
