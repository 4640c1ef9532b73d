"""Data-aware routing with much held (a table of thousands of columns): the held terms are
indexed once per version of an agent's holdings, and a question costs what it names, not
how many terms are held."""

from __future__ import annotations

import random
import time

import pytest

from concerto.agents.base import Agent, AgentContext, AgentInfo, AgentResult, Holdings
from concerto.agents.task import TaskInput
from concerto.nlp.terms import TermIndex, named, stems
from concerto.orchestrator import router as router_module
from concerto.orchestrator.router import Router
from concerto.orchestrator.semantic import SemanticIndex
from concerto.resources import Resources
from concerto.settings import Settings

from .test_router import _EMBEDDER

WORDS = ["sales", "region", "customer", "churn", "rate", "mm", "length", "flipper", "id", "north", "q3", "yield"]


def test_the_index_finds_what_named_finds() -> None:
    rng = random.Random(26)
    terms = tuple(dict.fromkeys(" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(400)))
    index = TermIndex(terms)
    for _ in range(300):
        question = stems(" ".join(rng.sample(WORDS, rng.randint(1, 6))))
        assert index.named(question) == [t for t in terms if named(question, t)]
    assert TermIndex(()).named({"sales"}) == []


class Holder(Agent):
    """An agent holding many terms (one Holdings object, as the analytics agents cache theirs)."""

    info = AgentInfo(name="holder", description="Tables of plant measurements", examples=["median yield per plant"])
    held = Holdings("v1", (*(f"sensor {n} reading" for n in range(200_000)), "widget yield"))

    def holdings(self) -> Holdings | None:
        return self.held

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        return AgentResult()


class Clock(Agent):
    info = AgentInfo(name="clock", description="Current local time in a city", examples=["what time is it in Chicago?"])

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        return AgentResult()


def make_router() -> Router:
    settings = Settings()
    agents = {a.info.name: a(settings, Resources(settings)) for a in (Holder, Clock)}
    index = SemanticIndex(Router.targets([a.info for a in agents.values()], {}), _EMBEDDER)
    return Router(agents, {}, index, threshold=0.35)


async def test_routing_does_not_read_every_held_term(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = router_module.TermIndex

    def counted(terms: tuple[str, ...]) -> TermIndex:
        built.append(len(terms))
        return original(terms)

    monkeypatch.setattr(router_module, "TermIndex", counted)
    router = make_router()
    first = await router.route("what is the widget yield in each plant?")
    assert first.classification.agents[:1] == ["holder"]
    questions = ("what time is it in Denver?", "sensor 17 reading by week", "widget yield trend")
    started = time.thread_time()  # CPU time, this thread's: not the machine's load
    for question in questions:
        held = router._held([question])
    took = time.thread_time() - started
    assert held == [{"holder": ["widget yield"]}]
    assert router._held(["sensor 17 reading by week"]) == [{"holder": ["sensor 17 reading"]}]
    assert built == [200_001]  # indexed once, by the first question
    started = time.thread_time()
    asked = stems(questions[1])
    assert [t for t in Holder.held.terms if named(asked, t)] == ["sensor 17 reading"]
    scan = time.thread_time() - started  # one question reading every held term, as routing did
    assert took < scan / 10, f"three questions took {took * 1000:.1f} ms, reading every term once {scan * 1000:.0f} ms"
    monkeypatch.setattr(Holder, "held", Holdings("v2", ("gadget yield",)))  # a new version of what it holds
    assert router._held(["gadget yield"]) == [{"holder": ["gadget yield"]}]
    assert built == [200_001, 1]
