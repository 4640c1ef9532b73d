"""The orchestrator: route, plan, execute, synthesize, with every step as an event.

`Orchestrator.ask()` never raises for a bad question or a failing backend: it returns
`OrchestratorOutput` or `OrchestratorErrorResponse`, so no stack trace reaches a user.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from concerto.agents.base import Agent, AgentContext
from concerto.agents.loader import Packs, load_packs
from concerto.agents.registry import AgentRegistry, RegistryError
from concerto.contracts.common import ErrorKind, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.events import Event, EventType, QueryState
from concerto.contracts.orchestrator import (
    ErrorCategory,
    IntentClassification,
    OrchestratorErrorResponse,
    OrchestratorInput,
    OrchestratorOutput,
)
from concerto.contracts.plan import AgentTask
from concerto.contracts.reading import TableReading
from concerto.llm.base import LLMClient, Usage
from concerto.orchestrator.events import EventStream, elapsed_ms
from concerto.orchestrator.executor import Executor, Runner
from concerto.orchestrator.first_use import FirstUseWork
from concerto.orchestrator.intents import load_intents
from concerto.orchestrator.log import EventLog
from concerto.orchestrator.planner import PlanError, Planner
from concerto.orchestrator.router import RouteDecision, Router
from concerto.orchestrator.semantic import SemanticIndex
from concerto.orchestrator.synthesizer import Synthesizer
from concerto.orchestrator.timeouts import Timeouts
from concerto.resources import Resources
from concerto.settings import Settings

log = logging.getLogger(__name__)

Result = OrchestratorOutput | OrchestratorErrorResponse


class Orchestrator:
    """One configured orchestrator; reuse it across questions (agents keep connections).

    By default it loads every installed pack (`CONCERTO_AGENTS` applied); pass `packs`
    to share a loaded set (the HTTP app does), or `registry` to run exactly those agents.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        registry: AgentRegistry | None = None,
        llm: LLMClient | None = None,
        resources: Resources | None = None,
        packs: Packs | None = None,
    ) -> None:
        self.settings = settings or Settings()
        if packs is None:
            packs = load_packs(self.settings.agents) if registry is None else Packs()
        self.packs = packs
        self.registry = registry if registry is not None else packs.registry(self.settings)
        self.resources = resources or Resources(self.settings)
        self.llm = llm if llm is not None else _llm_from_settings(self.settings)
        self._agents: dict[str, Agent] = {}
        self._router: Router | None = None  # built on first use, with the planner and synthesizer
        self._planner: Planner
        self._synthesizer: Synthesizer
        self._started = False
        self.timeouts = Timeouts.of_settings(self.settings)
        self.executor = Executor(
            self.agent, self.settings.max_concurrency, runner=_runner(self.settings), timeouts=self.timeouts
        )
        self.first_use = FirstUseWork()  # set `first_use.notify` to show its progress lines
        self._readers = packs.readers()

    # -- set-up -----------------------------------------------------------------------

    async def start(self) -> None:
        """Add the agents that packs discover at run time (e.g. tools of external MCP servers)."""
        if self._started:
            return
        self._started = True
        for cls in await self.packs.discover(self.settings):
            try:
                self.registry.register(cls)
            except RegistryError as exc:
                self.packs.fail(cls.info.pack, "discover", exc)
        self._router = None
        for warning in self.timeouts.unknown(self.registry.names(), self.packs.known):
            log.warning("%s", warning)

    def agent(self, name: str) -> Agent:
        """The shared instance of an agent, created on first use."""
        instance = self._agents.get(name)
        if instance is None:
            instance = self._agents[name] = self.registry.get(name)(self.settings, self.resources)
        return instance

    @property
    def router(self) -> Router:
        if self._router is None:
            agents = {name: self.agent(name) for name in self.registry.names()}
            tables = [*self.packs.intent_files(), *filter(None, [self.settings.intents_file])]
            self._intents = load_intents(set(agents), tables)
            targets = Router.targets(self.registry.infos(), self._intents)
            index = SemanticIndex(targets, self.resources.embedder, self.settings.data_dir / "cache")
            infos = {info.name: info for info in self.registry.infos()}
            self._planner = Planner(
                infos,
                self._intents,
                llm=self.llm,
                llm_retries=self.settings.llm_max_retries,
                timeouts=self.timeouts,
            )
            self._synthesizer = Synthesizer(infos, self.llm)
            self._router = Router(
                agents,
                self._intents,
                index,
                threshold=self.settings.semantic_threshold,
                llm=self.llm,
                llm_retries=self.settings.llm_max_retries,
            )
        return self._router

    async def prepare(self) -> None:
        """Do every agent's lasting first-use work now (demo data and its embeddings) instead of
        before the first question that needs it; `concerto serve` calls it at start-up."""
        agents = [self.agent(name) for name in self.registry.names()]
        await self.first_use.prepare(agents, lasting=True, bounded=False)  # `/ready` says it is not ready meanwhile

    async def aclose(self) -> None:
        """Close agents and shared resources."""
        await self.first_use.aclose()
        for agent in self._agents.values():
            try:
                await agent.aclose()
            except Exception as exc:
                log.warning("closing %s failed: %s", agent.info.name, exc)
        self._agents.clear()
        closer = getattr(self.executor.runner, "aclose", None)
        if closer is not None:
            await closer()
        await self.resources.aclose()
        closer = getattr(self.llm, "aclose", None)
        if closer is not None:
            await closer()

    async def __aenter__(self) -> Orchestrator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- answering --------------------------------------------------------------------

    async def ask(
        self,
        query: OrchestratorInput | str | dict[str, Any],
        *,
        now: datetime | None = None,
        events: EventStream | None = None,
        agent: str | None = None,
    ) -> Result:
        """Answer one question. `now` fixes the clock every agent sees; `agent` skips routing
        and asks that agent alone (a direct call: MCP's per-agent tools, LangGraph nodes)."""
        start = time.perf_counter()
        try:
            request = _as_input(query)
        except ValidationError as exc:
            qid = events.query_id if events else ""
            if events:
                events.state(QueryState.FAILED, "Invalid question")
                events.close()
            return OrchestratorErrorResponse(
                query_id=qid,
                error_message="Invalid question — " + validation_message(exc.errors()),
                error_category="invalid_input",
                alternative_queries=self._examples(),
            )
        events = events or EventStream(request.query_id, self.settings.max_events)
        events.query_id = request.query_id
        try:
            result = await self._answer(request, _utc(now), events, start, agent)
        except Exception as exc:  # the last net: a bug becomes a structured error, not a trace
            log.exception("query %s failed", request.query_id)
            events.emit(EventType.ERROR, "Internal error", step=99, details={"error": type(exc).__name__})
            result = self._error(
                request, start, f"Internal error: {type(exc).__name__}: {exc}", "synthesis_failed", events
            )
        events.close()
        if self.settings.store_events:
            try:
                EventLog.of(self.settings).write_soon(list(events.events))
            except Exception as exc:
                log.warning("could not store events: %s", exc)
        return result

    async def stream(
        self,
        query: OrchestratorInput | str | dict[str, Any],
        *,
        now: datetime | None = None,
        agent: str | None = None,
    ) -> AsyncIterator[Event | Result]:
        """Yield events as they happen, then the result (`now` and `agent` as for `ask`)."""
        import asyncio

        qid = query.query_id if isinstance(query, OrchestratorInput) else ""
        events = EventStream(qid, self.settings.max_events)
        subscription = events.subscribe()
        first = asyncio.ensure_future(anext(subscription, None))  # subscribe before work starts
        await asyncio.sleep(0)
        task = asyncio.create_task(self.ask(query, now=now, events=events, agent=agent))
        pending_event: asyncio.Future[Event | None] = first
        try:
            while True:
                event = await pending_event
                if event is None:
                    break
                yield event
                pending_event = asyncio.ensure_future(anext(subscription, None))
            yield await task
        finally:  # the reader went away (e.g. an SSE client disconnected): stop the work
            for leftover in (pending_event, task):
                if not leftover.done():
                    leftover.cancel()

    async def _answer(
        self, request: OrchestratorInput, now: datetime, events: EventStream, start: float, agent: str | None = None
    ) -> Result:
        usage = Usage()
        breakdown: dict[str, Any] = {}
        events.state(QueryState.RECEIVED, "Received question", chars=len(request.query))
        events.emit(EventType.RECEIVED, "Received question", details={"query": request.query[:100]})

        events.state(QueryState.ANALYZING, "Classifying the question")
        t = time.perf_counter()
        reading = await self._read(request, events) if agent is None or agent in self.registry.names() else None
        if agent is None:
            decision = await self.router.route(request.query, usage, request, reading)
        elif agent in self.registry.names():
            decision = self._direct(agent, request.query)
        else:
            known = ", ".join(self.registry.names()) or "none"
            return self._error(
                request, start, f"No agent named '{agent}' is loaded (loaded: {known})", "invalid_input", events
            )
        breakdown["routing_ms"] = elapsed_ms(t)
        cls = decision.classification
        events.emit(
            EventType.THINKING,
            f"Intent: {cls.primary_intent} ({cls.classification_method}, {cls.confidence:.2f})",
            step=2,
            details={"agents": cls.agents, "method": cls.classification_method, "notes": decision.notes},
        )
        notes = list(decision.notes)
        if not cls.agents:
            return self._error(
                request,
                start,
                self._no_match_message(),
                "classification_failed",
                events,
                classification=cls,
                breakdown=breakdown,
            )

        t = time.perf_counter()
        try:
            plan, plan_notes = await self._planner.plan(request.query, decision, request.query_id, usage)
        except PlanError as exc:
            return self._error(
                request,
                start,
                f"Could not plan the question: {exc}",
                "routing_failed",
                events,
                classification=cls,
                breakdown=breakdown,
            )
        notes += plan_notes
        breakdown["planning_ms"] = elapsed_ms(t)
        breakdown["plan"] = {
            "strategy": plan.strategy.value,
            "reasoning": plan.reasoning,
            "source": plan.source,
            "max_concurrency": plan.max_concurrency,
            "tasks": [{"task_id": x.task_id, "agent": x.agent, "depends_on": x.depends_on} for x in plan.tasks],
        }
        events.state(
            QueryState.PLANNED,
            f"Planned {len(plan.tasks)} task(s), {plan.strategy.value}",
            reasoning=plan.reasoning,
            source=plan.source,
            tasks=[{"task_id": x.task_id, "agent": x.agent, "depends_on": x.depends_on} for x in plan.tasks],
        )

        t = time.perf_counter()
        needed = dict.fromkeys(a for task in plan.tasks for a in (task.agent, task.fallback_agent) if a)
        until = start + request.max_latency_ms / 1000 if request.max_latency_ms else None
        # Outside the tasks' timeouts, inside the question's deadline; bounded (first_use.py).
        await self.first_use.prepare([self.agent(a) for a in needed], request, events, until=until)
        if (waited := elapsed_ms(t)) >= 1:
            breakdown["first_use_ms"] = waited

        events.state(QueryState.DISPATCHING, "Dispatching agents")
        t = time.perf_counter()
        prepared = {
            task.task_id: decision.structured[task.agent] for task in plan.tasks if task.agent in decision.structured
        }
        deadline = None
        if request.max_latency_ms:
            deadline = max(request.max_latency_ms - (time.perf_counter() - start) * 1000, 1.0)
        events.state(QueryState.PROCESSING, "Agents working")
        results = await self.executor.execute(
            plan,
            self._context_factory(request, now, events, reading),
            events,
            deadline_ms=deadline,
            max_concurrency=plan.max_concurrency,
            prepared=prepared,
        )
        breakdown["execution_ms"] = elapsed_ms(t)
        breakdown["agents_ms"] = {r.task_id: round(r.total_latency_ms, 3) for r in results}
        cls.entities_extracted = cls.entities_extracted or _entities(results)

        events.state(QueryState.AGGREGATING, "Combining results")
        ok = [r for r in results if r.status is ExecutionStatus.COMPLETED]
        if not ok:
            timed_out = any(r.status is ExecutionStatus.CANCELLED for r in results)
            category: ErrorCategory = "timeout" if timed_out else _failure_category(results)
            message = " ".join(self._synthesizer.template(request, results).response.split())
            return self._error(
                request,
                start,
                message,
                category,
                events,
                classification=cls,
                partial=results,
                breakdown=breakdown,
                retry=timed_out,
            )
        t = time.perf_counter()
        synthesis = await self._synthesizer.synthesize(request, results, usage)
        breakdown["synthesis_ms"] = elapsed_ms(t)
        notes += synthesis.notes
        if usage.calls or usage.failures:
            breakdown["llm"] = usage.model_dump()
        total = elapsed_ms(start)
        events.state(QueryState.COMPLETED, "Answered", total_ms=total)
        return OrchestratorOutput(
            query_id=request.query_id,
            response=synthesis.response,
            response_type=synthesis.response_type,
            key_findings=synthesis.key_findings,
            agents_invoked=list(dict.fromkeys(r.agent for r in results if r.status is not ExecutionStatus.SKIPPED)),
            agent_results=results,
            total_latency_ms=total,
            breakdown=breakdown,
            follow_up_questions=synthesis.follow_up_questions,
            intent_classification=cls,
            notes=notes,
            answer_values=synthesis.answer_values,
        )

    def _direct(self, name: str, question: str) -> RouteDecision:
        """The decision for a question asked of one agent by name: no routing, one task (with the
        payload the agent's own structured format reads from the question, if it is in one)."""
        _ = self.router  # the planner and synthesizer are built with it
        payload = self.agent(name).match_structured(question)
        classification = IntentClassification(
            primary_intent=name,
            confidence=1.0,
            classification_method="direct",
            agents=[name],
            entities_extracted=payload or {},
            reasoning=f"asked of {name} directly",
        )
        return RouteDecision(classification, structured={name: payload} if payload is not None else {})

    async def _read(self, request: OrchestratorInput, events: EventStream) -> TableReading | None:
        """The question read against the table it names, by the pack that holds the table (the
        first reader that reads it); None without a named source or when no pack reads it. A
        reader's failure is logged and the question routes as without a reading."""
        if not self._readers or not (request.source or request.data_source_id):
            return None
        for pack, reader in self._readers:
            try:
                reading: TableReading | None = await asyncio.to_thread(reader, self.settings, self.resources, request)
            except Exception:
                log.exception("the reader of pack %s failed", pack)
                continue
            if reading is not None:
                events.emit(
                    EventType.THINKING,
                    f"Read as: {reading.read_as()}"[:200],
                    step=2,
                    details={"source": reading.source, "kind": reading.kind, "confidence": reading.confidence},
                )
                return reading
        return None

    def _context_factory(  # type: ignore[no-untyped-def]
        self, request: OrchestratorInput, now: datetime, events: EventStream, reading: TableReading | None = None
    ):
        def make(task: AgentTask, agent: str) -> AgentContext:
            return AgentContext(
                reading=reading,
                query=request,
                now=now,
                settings=self.settings,
                resources=self.resources,
                llm=self.llm,
                task_id=task.task_id,
                agent=agent,
                _emit=events.agent_emit,
            )

        return make

    def _examples(self) -> list[str]:
        return [info.examples[0] for info in self.registry.infos() if info.examples][:8]

    def _no_match_message(self) -> str:
        kinds = "; ".join(f"{i.name}: {i.description}" for i in self.registry.infos())
        message = (
            f"No agent can answer that question. I can answer questions like these — {kinds}"
            if kinds
            else "No agents are loaded (check CONCERTO_AGENTS)."
        )
        if self.packs.failures:  # what might have answered, and why it is not there
            message += " Not available: " + "; ".join(str(f) for f in self.packs.failures)
        return message

    def _error(
        self,
        request: OrchestratorInput,
        start: float,
        message: str,
        category: ErrorCategory,
        events: EventStream,
        *,
        classification: IntentClassification | None = None,
        partial: list[AgentDispatchResponse] | None = None,
        breakdown: dict[str, Any] | None = None,
        retry: bool = False,
    ) -> OrchestratorErrorResponse:
        events.emit(EventType.ERROR, message[:200], step=99, details={"category": category})
        events.state(QueryState.FAILED, "Failed", category=category)
        alternatives = [e.suggestion for r in partial or [] for e in r.errors if e.suggestion]
        return OrchestratorErrorResponse(
            query_id=request.query_id,
            error_message=message,
            error_category=category,
            partial_results=partial,
            retry_recommended=retry,
            alternative_queries=list(dict.fromkeys(alternatives + self._examples()))[:8],
            intent_classification=classification,
            total_latency_ms=elapsed_ms(start),
        )


def _as_input(query: OrchestratorInput | str | dict[str, Any]) -> OrchestratorInput:
    if isinstance(query, OrchestratorInput):
        return query
    if isinstance(query, str):
        return OrchestratorInput(query=query)
    return OrchestratorInput.model_validate(query)


def validation_message(errors: Sequence[Mapping[str, Any]], skip: str = "") -> str:
    """Pydantic's errors as one readable line: `field: what is wrong; ...` (`skip`: a leading
    location part to leave out, such as FastAPI's `body`)."""
    parts = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]
        if loc and loc[0] == skip:
            loc = loc[1:]
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{'.'.join(loc) or 'input'}: {msg}")
    return "; ".join(parts)


def _failure_category(results: list[AgentDispatchResponse]) -> ErrorCategory:
    """Why no agent answered: `invalid_input` when each one said that what the question names
    does not exist (a source, metric or KPI that is not there: the caller's to fix; HTTP 422),
    else `all_agents_failed` (a backend's fault; HTTP 502). Tasks skipped because another failed
    say nothing of their own."""
    errors = [e for r in results for e in r.errors if e.kind is not ErrorKind.DEPENDENCY]
    if errors and all(e.kind is ErrorKind.NOT_FOUND for e in errors):
        return "invalid_input"
    return "all_agents_failed"


def _utc(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    return now if now.tzinfo else now.replace(tzinfo=UTC)


def _entities(results: list[AgentDispatchResponse]) -> dict[str, Any]:
    """What the agents report they recognised (city, kpi, metric ...), first report of a key wins."""
    found: dict[str, Any] = {}
    for r in results:
        for key, value in r.entities.items():
            found.setdefault(key, value)
    return found


def _runner(settings: Settings) -> Runner | None:
    """Where agents' `run` goes: None (in this process) unless `CONCERTO_EXECUTOR=ray`."""
    if settings.executor == "local":
        return None
    from concerto.cluster.ray_runner import RayRunner

    return RayRunner(settings)


def _llm_from_settings(settings: Settings) -> LLMClient | None:
    if not settings.llm_configured:
        return None
    from concerto.llm.openai_compat import llm_from_settings

    return llm_from_settings(settings)
