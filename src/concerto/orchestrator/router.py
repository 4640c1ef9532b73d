"""The router cascade: exact structured formats, then semantic matching, then an LLM.

Nothing here knows any agent: step 1 asks each agent whether the text is in a format
it defines; step 2 compares the question with what agents and intents declare; step 3
(only with an LLM configured, and only when step 2 is not confident) shows the LLM the
same declarations.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from concerto.agents.base import Agent, AgentInfo, Holdings
from concerto.contracts.orchestrator import IntentClassification, OrchestratorInput
from concerto.contracts.reading import CONFIDENT, TableReading
from concerto.llm.base import LLMClient, LLMError, Message, Usage
from concerto.nlp.terms import TermIndex, masked, stem, stems, words
from concerto.orchestrator.intents import IntentSpec
from concerto.orchestrator.semantic import Match, SemanticIndex, Target, clauses, steps

log = logging.getLogger(__name__)

AMBIGUITY_MARGIN = 0.03  # top two targets closer than this are "not confident"
HELD_BOOST = 0.2  # how much more an agent scores when the question names something it holds


@dataclass
class RouteDecision:
    """The classification plus payloads already parsed by a structured format."""

    classification: IntentClassification
    structured: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    steps: list[tuple[str, str]] = field(default_factory=list)  # (agent, its step's words) when one follows another

    @property
    def matched(self) -> bool:
        return bool(self.classification.agents) or self.classification.primary_intent != "none"


class LLMRoute(BaseModel):
    """What the LLM router must answer."""

    agents: list[str] = Field(default_factory=list, description="Agent names to run, most relevant first")
    intent: str | None = Field(None, description="A named intent, if one fits")
    confidence: float = Field(0.5, ge=0, le=1)
    reasoning: str = ""


class Router:
    """Classifies a question into agents or a named intent."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        intents: Mapping[str, IntentSpec],
        index: SemanticIndex | None,
        *,
        threshold: float,
        llm: LLMClient | None = None,
        llm_retries: int = 1,
    ) -> None:
        self.agents = agents
        self.intents = intents
        self.index = index
        self.threshold = threshold
        self.llm = llm
        self.llm_retries = llm_retries
        self._indexes: dict[str, tuple[tuple[str, ...], TermIndex]] = {}  # holdings key → (terms, their index)

    @staticmethod
    def targets(infos: list[AgentInfo], intents: Mapping[str, IntentSpec]) -> list[Target]:
        """Routing targets from agent declarations and intents that have examples."""
        targets = [Target(i.name, tuple(dict.fromkeys([i.description, *i.capabilities, *i.examples]))) for i in infos]
        targets += [
            Target(s.name, tuple(dict.fromkeys([s.description, *s.examples]))) for s in intents.values() if s.examples
        ]
        return targets

    async def route(
        self,
        question: str,
        usage: Usage | None = None,
        query: OrchestratorInput | None = None,
        reading: TableReading | None = None,
    ) -> RouteDecision:
        """Run the cascade and time it: a format an agent defines, then a confident reading of
        the question against the table it names, then meaning, then an LLM."""
        start = time.perf_counter()
        decision = self._structured(question)
        if decision is None and reading is not None:
            decision = self._by_reading(reading, query)
        if decision is None:
            # The forward pass takes ~10 ms of CPU (the first one also loads the model):
            # a worker thread keeps the event loop, and so other questions, moving.
            decision = await asyncio.to_thread(self._semantic, question, query)
            confident = decision.classification.confidence >= self.threshold and not decision.notes
            if self.llm is not None and not confident:
                decision = await self._llm(question, decision, usage, query)
        decision.classification.classification_latency_ms = round((time.perf_counter() - start) * 1000, 3)
        return decision

    def _structured(self, question: str) -> RouteDecision | None:
        for name, agent in self.agents.items():
            payload = agent.match_structured(question)
            if payload is not None:
                return RouteDecision(
                    IntentClassification(
                        primary_intent=name,
                        confidence=1.0,
                        classification_method="pattern",
                        agents=[name],
                        entities_extracted=payload,
                        reasoning=f"the question is in a format {name} defines",
                    ),
                    structured={name: payload},
                )
        return None

    def _by_reading(self, reading: TableReading, query: OrchestratorInput | None) -> RouteDecision | None:
        """The agent a confident reading names (`answered_by`), when it is loaded and ready."""
        name = reading.answered_by
        if name is None or name not in self.agents or reading.confidence < CONFIDENT:
            return None
        if self.agents[name].ready(query) is not None:
            return None
        return RouteDecision(
            IntentClassification(
                primary_intent=name,
                confidence=round(reading.confidence, 4),
                classification_method="reading",
                agents=[name],
                reasoning=f"read against '{reading.source}' as: {reading.read_as()}"[:500],
            )
        )

    def _semantic(self, question: str, query: OrchestratorInput | None = None) -> RouteDecision:
        if self.index is None or not self.index.targets:
            return _unmatched(0.0, "semantic", "no agents are loaded")
        parts = clauses(question)
        texts = [question, *parts] if len(parts) > 1 else [question]
        held, unready = self._held(texts), self._unready(query)
        if query is not None and (query.source or query.data_source_id):
            # A question about a named table goes to agents that take a table, unless it names
            # something another agent holds (a KPI, a city) (issue 28 item 4).
            unready |= {n for n, a in self.agents.items() if not takes_source(a.info) and n not in held[0]}
        ranked = self._ranked(texts, held, unready)
        whole = ranked[0]
        if not whole:
            return _unmatched(0.0, "semantic", "no agent is ready to answer")
        chosen: list[Match] = [whole[0]] if whole[0].score >= self.threshold else []
        for clause_rank in ranked[1:]:
            if not clause_rank:
                continue
            top = clause_rank[0]
            if top.score >= self.threshold and top.name not in {m.name for m in chosen}:
                chosen.append(top)
        if not chosen:
            decision = _unmatched(whole[0].score, "semantic", f"closest was {whole[0].name} at {whole[0].score:.2f}")
            decision.classification.secondary_intents = [m.name for m in whole[:3]]
            return decision
        sequence = self._steps(question, unready)
        if sequence:
            for agent, _ in sequence:
                if agent not in [m.name for m in chosen]:
                    chosen.append(Match(agent, next(m.score for m in whole if m.name == agent)))
        names = [m.name for m in chosen]
        agents = self._expand(names)
        decision = RouteDecision(
            IntentClassification(
                primary_intent=names[0],
                confidence=round(min(max(chosen[0].score, 0.0), 1.0), 4),
                secondary_intents=names[1:],
                classification_method="semantic",
                agents=agents,
                reasoning="; ".join(f"{m.name} {m.score:.2f}" for m in chosen),
            )
        )
        decision.steps = sequence
        runner_up = next((m for m in whole[1:] if m.name not in names), None)
        if runner_up and len(names) == 1 and whole[0].score - runner_up.score < AMBIGUITY_MARGIN:
            decision.notes.append(
                f"{whole[0].name} ({whole[0].score:.2f}) and {runner_up.name} ({runner_up.score:.2f}) were close"
            )
        return decision

    def _ranked(self, texts: list[str], held: list[dict[str, list[str]]], unready: set[str]) -> list[list[Match]]:
        """Targets by score for each text. An agent holding terms the text names is scored on the
        text with those terms masked too ("average fertility rate by country" → "average X by X")
        and keeps the better score: what the question asks of the data, not only what the data
        is about, says which of the agents holding it answers (their declared question forms
        match the masked text); it then gets the held-term boost."""
        masked_texts = [
            masked(text, [t for terms in h.values() for t in terms]) for text, h in zip(texts, held, strict=True)
        ]
        redo = [i for i, (text, m) in enumerate(zip(texts, masked_texts, strict=True)) if m != text]
        # The plain and the masked texts in one batch: one pass of the model, not two.
        both = self.index.rank_many(texts + [masked_texts[i] for i in redo]) if self.index else []
        plain = both[: len(texts)] if self.index else [[] for _ in texts]
        again = dict(zip(redo, both[len(texts) :], strict=True))
        out = []
        for i, (matches, h) in enumerate(zip(plain, held, strict=True)):
            if i in again:
                by_mask = {m.name: m.score for m in again[i]}
                matches = [Match(m.name, max(m.score, by_mask[m.name])) if m.name in h else m for m in matches]
            out.append(_adjusted(matches, h, unready))
        return out

    def _steps(self, question: str, unready: set[str]) -> list[tuple[str, str]]:
        """(agent, step) for each step of a question that asks for one thing after another, when
        every step finds an agent of its own (an intent stands for itself); else none."""
        parts = steps(question)
        if len(parts) < 2 or self.index is None:
            return []
        found = []
        for part in parts:
            held = self._held([part])
            best = next(iter(self._ranked([part], held, unready)[0]), None)
            if best is None or best.score < self.threshold or best.name in self.intents:
                return []
            found.append((best.name, part))
        return found

    def _held(self, texts: list[str]) -> list[dict[str, list[str]]]:
        """Per text, the agents holding terms it names, and which terms (data-aware routing)."""
        holdings = {name: agent.holdings() for name, agent in self.agents.items()}
        out = []
        for text in texts:
            question = stems(text)
            found: dict[str, list[str]] = {}
            for name, held in holdings.items():
                terms = self._index(held).named(question) if held else []
                if terms:
                    found[name] = terms
            found = _most_specific(found)
            for intent, spec in self.intents.items():  # an intent stands for its agents
                terms = [t for task in spec.tasks for t in found.get(task.agent, [])]
                if terms:
                    found[intent] = terms
            out.append(found)
        return out

    def _index(self, held: Holdings) -> TermIndex:
        """The index of what an agent holds, built once per version of its terms (`Holdings.key`):
        routing then costs what the question names, not how many terms are held (a table of
        10,000 columns). Agents that hold the same data (the analytics agents) share one."""
        known = self._indexes.get(held.key)
        if known is None or (known[0] is not held.terms and known[0] != held.terms):
            if len(self._indexes) > 64:  # keys of versions no agent holds any more
                self._indexes.clear()
            known = (held.terms, TermIndex(held.terms))
            self._indexes[held.key] = known
        return known[1]

    def _unready(self, query: OrchestratorInput | None = None) -> set[str]:
        return {name for name, agent in self.agents.items() if agent.ready(query) is not None}

    def _expand(self, names: list[str]) -> list[str]:
        """Agents of the chosen targets (an intent stands for its agents), without repeats."""
        out: list[str] = []
        for name in names:
            members = [t.agent for t in self.intents[name].tasks] if name in self.intents else [name]
            out += [m for m in members if m not in out]
        return out

    async def _llm(
        self, question: str, fallback: RouteDecision, usage: Usage | None, query: OrchestratorInput | None = None
    ) -> RouteDecision:
        from concerto.llm.structured import complete_structured

        assert self.llm is not None
        unready = self._unready(query)
        catalogue = []
        for a in self.agents.values():
            if a.info.name in unready:
                continue
            entry: dict[str, Any] = {
                "name": a.info.name,
                "description": a.info.description,
                "capabilities": a.info.capabilities,
            }
            held = a.holdings()
            if held and held.terms:
                entry["holds"] = list(held.terms[:40])
            catalogue.append(entry)
        intents = [{"intent": s.name, "description": s.description} for s in self.intents.values()]
        messages = [
            Message(
                role="system",
                content=(
                    "You route a user's question to the agents that can answer it. Choose only from the "
                    "catalogue; choose none if nothing fits. Answer with JSON only.\n"
                    f"AGENTS: {catalogue}\nINTENTS: {intents}"
                ),
            ),
            Message(role="user", content=question),
        ]
        try:
            route = await complete_structured(
                self.llm, messages, LLMRoute, retries=self.llm_retries, usage=usage, purpose="route"
            )
        except LLMError as exc:
            fallback.notes.append(f"LLM routing failed ({exc}); used the semantic result")
            return fallback
        assert isinstance(route, LLMRoute)
        unknown = [a for a in route.agents if a not in self.agents]
        names = [a for a in route.agents if a in self.agents]
        if route.intent is not None and route.intent in self.intents:
            names = self._expand([route.intent, *names])
        if unknown or not names:
            why = f"unknown agents {unknown}" if unknown else "no agent"
            fallback.notes.append(f"LLM routing chose {why}; used the semantic result")
            return fallback
        return RouteDecision(
            IntentClassification(
                primary_intent=route.intent if route.intent in self.intents else names[0],
                confidence=route.confidence,
                secondary_intents=names[1:],
                classification_method="llm",
                agents=names,
                reasoning=route.reasoning,
            )
        )


def takes_source(info: AgentInfo) -> bool:
    """Whether an agent answers about a table the question names (it declares a source input)."""
    return "source" in info.inputs or "data_source_id" in info.inputs


def _adjusted(matches: list[Match], held: dict[str, list[str]], unready: set[str]) -> list[Match]:
    """Matches with agents that hold a named term raised, and agents that are not ready left out."""
    scored = [
        Match(m.name, m.score + (HELD_BOOST if m.name in held else 0.0)) for m in matches if m.name not in unready
    ]
    return sorted(scored, key=lambda m: -m.score)


def _unmatched(score: float, method: str, reason: str) -> RouteDecision:
    return RouteDecision(
        IntentClassification(
            primary_intent="none",
            confidence=round(min(max(score, 0.0), 1.0), 4),
            classification_method=method,
            agents=[],
            reasoning=reason,
        )
    )


def _most_specific(found: dict[str, list[str]]) -> dict[str, list[str]]:
    """Drop a held term whose words are a part of a longer term another agent holds and the
    question names: in "customer satisfaction by team" the agent holding "customer
    satisfaction" is meant, not every agent whose table has a "customer" column."""
    words_of = {(name, t): {stem(w) for w in words(t)} for name, terms in found.items() for t in terms}
    out: dict[str, list[str]] = {}
    for name, terms in found.items():
        kept = [
            t for t in terms if not any(other != name and words_of[(name, t)] < w for (other, _), w in words_of.items())
        ]
        if kept:
            out[name] = kept
    return out
