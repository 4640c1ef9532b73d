"""LangGraph both ways, with real graphs and a real orchestrator: Concerto as a node, a
subgraph and a one-agent node; compiled graphs as agents answering through `ask`."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph

from concerto.agents.base import Agent
from concerto.agents.loader import Packs, load_registry
from concerto.agents.pack import Pack
from concerto.agents.registry import AgentRegistry
from concerto.contracts.common import ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.events import Event, EventType
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.protocols.langgraph import (
    EVENT_KEY,
    agent_node,
    concerto_node,
    concerto_subgraph,
    langgraph_agent,
)
from concerto.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2025, 6, 15, 9, 30, tzinfo=UTC)
KPI_RANGE = "kpi-attrition-rate department-home-loan range-4-months start-2025-02-01 end-2025-05-31"


class ChatState(TypedDict, total=False):
    question: str
    concerto_input: dict[str, Any]
    answer: str | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    shouted: str
    apology: str


class WordState(TypedDict, total=False):
    question: str
    previous_results: list[dict[str, Any]]
    answer: str
    words: int
    after: list[str]


def shout(state: ChatState) -> dict[str, Any]:
    """A downstream node that uses Concerto's answer and its contract."""
    agents = ",".join((state.get("result") or {}).get("agents_invoked", ["-"]))
    return {"shouted": f"{(state.get('answer') or '').upper()} [{agents}]"}


def apologise(state: ChatState) -> dict[str, Any]:
    """The orchestrator's error contract says it in `error_message`, an agent's in `errors`."""
    error = state["error"] or {}
    return {"apology": "Sorry: " + error["error_message"]}


def chat_graph(node: Any) -> Any:
    """START -> concerto -> (shout | apologise) -> END: the error contract decides the edge."""
    graph = StateGraph(ChatState)
    graph.add_node("concerto", node)
    graph.add_node("shout", shout)
    graph.add_node("apologise", apologise)
    graph.add_edge(START, "concerto")
    graph.add_conditional_edges("concerto", lambda s: "apologise" if s.get("error") else "shout")
    graph.add_edge("shout", END)
    graph.add_edge("apologise", END)
    return graph.compile()


def one_node_graph(node: Callable[..., Any], name: str = "count") -> Any:
    graph = StateGraph(WordState)
    graph.add_node(name, node)
    graph.add_edge(START, name)
    graph.add_edge(name, END)
    return graph.compile()


async def count(state: WordState) -> dict[str, Any]:
    get_stream_writer()({"title": "counting words"})
    text = state["question"].split(":", 1)[-1]
    words = len(text.split())
    after = [p["agent"] for p in state.get("previous_results", [])]
    return {"words": words, "after": after, "answer": f"{words} words"}


def word_counter(graph: Any, **options: Any) -> type[Agent]:
    return langgraph_agent(
        graph,
        name="word_counter",
        description="Counts the words of a sentence.",
        examples=["count the words in: hello there", "how many words are in this sentence"],
        **options,
    )


@pytest.fixture
async def echo_orchestrator(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Orchestrator]:
    monkeypatch.setenv("CONCERTO_AGENTS", "echo")
    async with Orchestrator(Settings(store_events=False)) as orchestrator:
        yield orchestrator


def events_of(chunks: list[Any]) -> list[Event]:
    return [Event.model_validate(c[EVENT_KEY]) for c in chunks if isinstance(c, dict) and EVENT_KEY in c]


# -- Concerto in LangGraph ---------------------------------------------------------------


async def test_the_node_answers_and_a_downstream_node_uses_its_output(echo_orchestrator: Orchestrator) -> None:
    state = await chat_graph(concerto_node(echo_orchestrator)).ainvoke({"question": "echo hello world"})
    assert state["error"] is None
    assert state["answer"] == 'Echo: "hello world"'
    output = OrchestratorOutput.model_validate(state["result"])
    assert output.agent_results[0].output["echo_text"] == "hello world"
    assert state["shouted"] == 'ECHO: "HELLO WORLD" [echo]'
    assert "apology" not in state


async def test_the_custom_stream_shows_the_events_before_the_final_state(echo_orchestrator: Orchestrator) -> None:
    graph = chat_graph(concerto_node(echo_orchestrator))
    chunks = [c async for c in graph.astream({"question": "echo hello world"}, stream_mode=["custom", "updates"])]
    modes = [mode for mode, _ in chunks]
    answered = modes.index("updates")
    assert answered > 5 and set(modes[:answered]) == {"custom"}  # every event came before the update
    events = events_of([data for mode, data in chunks if mode == "custom"])
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert {e.type for e in events} >= {EventType.RECEIVED, EventType.ACTION, EventType.RESULT, EventType.STATE}
    assert any(e.source == "echo" and e.title == "echo answered" for e in events)
    assert events[-1].title == "Answered"
    assert chunks[answered][1]["concerto"]["answer"] == 'Echo: "hello world"'
    # custom mode alone carries only the events
    only = [c async for c in graph.astream({"question": "echo hello world"}, stream_mode="custom")]
    assert len(events_of(only)) == len(only) > 5


async def test_the_subgraph_is_a_node_of_a_parent_graph(echo_orchestrator: Orchestrator) -> None:
    parent = chat_graph(concerto_subgraph(echo_orchestrator))
    state = await parent.ainvoke({"question": "echo: from the parent"})
    assert state["answer"] == 'Echo: "from the parent"'
    assert state["shouted"] == 'ECHO: "FROM THE PARENT" [echo]'
    chunks = [
        c async for c in parent.astream({"question": "echo: again"}, stream_mode=["custom", "updates"], subgraphs=True)
    ]
    inside = [data for namespace, mode, data in chunks if mode == "custom" and namespace[0].startswith("concerto:")]
    assert any(e.title == "echo answered" for e in events_of(inside))
    updates = [data for namespace, mode, data in chunks if mode == "updates" and namespace == ()]
    assert [next(iter(u)) for u in updates] == ["concerto", "shout"]


@pytest.mark.parametrize(
    ("state", "said"),
    [
        ({"question": ""}, "the question is empty"),
        ({}, "query"),
        ({"question": "x" * 600}, "characters long"),
        ({"question": "echo hi", "concerto_input": {"output_format": "poem"}}, "output_format"),
        ({"question": "echo hi", "concerto_input": "brief"}, "must be a mapping"),
    ],
)
async def test_a_bad_question_comes_back_as_the_error_contract(
    echo_orchestrator: Orchestrator, state: dict[str, Any], said: str
) -> None:
    result = await chat_graph(concerto_node(echo_orchestrator)).ainvoke(state)
    error = OrchestratorErrorResponse.model_validate(result["error"])
    assert error.error_category == "invalid_input" and said in error.error_message
    assert result["answer"] is None and result["result"] is None
    assert result["apology"].startswith("Sorry: Invalid question")


async def test_input_fields_and_key_names_are_the_callers(echo_orchestrator: Orchestrator) -> None:
    node = concerto_node(echo_orchestrator, question_key="q", input_key="opts", answer_key="a", result_key="r")
    update = await node({"q": "echo hello world", "opts": {"output_format": "brief", "query_id": "fixed-id"}})
    assert update["a"] and update["error"] is None
    assert update["r"]["query_id"] == "fixed-id"


async def test_agent_node_asks_one_agent_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONCERTO_AGENTS", "kpi,echo")
    async with Orchestrator(Settings(store_events=False)) as orchestrator:
        graph = StateGraph(ChatState)
        graph.add_node("kpi", agent_node(orchestrator, "kpi", clock=lambda: NOW))
        graph.add_edge(START, "kpi")
        graph.add_node("shout", lambda s: {"shouted": (s.get("answer") or "").upper()})
        graph.add_edge("kpi", "shout")
        compiled = graph.compile()
        question: ChatState = {"question": "home-loan attrition rate previous 4 months"}
        chunks: list[Any] = [c async for c in compiled.astream(question, stream_mode=["custom", "values"])]
    state = chunks[-1][1]
    output = OrchestratorOutput.model_validate(state["result"])
    assert output.intent_classification.classification_method == "direct" and output.agents_invoked == ["kpi"]
    assert output.agent_results[0].output["structured_query"] == KPI_RANGE
    assert "Home-loan attrition rate" in state["answer"]
    assert state["shouted"] == state["answer"].upper()
    titles = [e.title for e in events_of([data for mode, data in chunks if mode == "custom"])]
    assert "Dispatching kpi" in titles and titles.index("Dispatching kpi") < titles.index("kpi answered")


async def test_agent_node_reports_failures_in_the_state(echo_orchestrator: Orchestrator) -> None:
    unknown = await chat_graph(agent_node(echo_orchestrator, "weather")).ainvoke({"question": "rain?"})
    error = OrchestratorErrorResponse.model_validate(unknown["error"])
    assert error.error_category == "invalid_input" and "No agent named 'weather'" in error.error_message
    assert "loaded: echo" in error.error_message and unknown["result"] is None
    assert unknown["apology"] == "Sorry: " + error.error_message
    empty = await agent_node(echo_orchestrator, "echo")({"question": " "})
    assert empty["error"]["error_category"] == "invalid_input" and empty["answer"] is None
    refused = await agent_node(echo_orchestrator, "echo")({"question": 'echo ""'})  # the agent's own check
    assert refused["error"]["error_category"] == "all_agents_failed"
    failed = AgentDispatchResponse.model_validate(refused["error"]["partial_results"][0])
    assert failed.agent == "echo" and failed.errors[0].message == "Echo text must be non-empty."


# -- LangGraph in Concerto ---------------------------------------------------------------


def orchestrator_with(tmp_path: Path, *agents: type[Agent], **settings: Any) -> Orchestrator:
    return Orchestrator(Settings(data_dir=tmp_path, store_events=False, **settings), registry=AgentRegistry(agents))


async def test_a_graph_registered_as_an_agent_answers_through_ask(tmp_path: Path) -> None:
    counter = word_counter(one_node_graph(count))
    echo = load_registry("echo").get("echo")
    async with orchestrator_with(tmp_path, echo, counter) as orchestrator:
        items = [i async for i in orchestrator.stream("count the words in: the quick brown fox")]
    result = items[-1]
    assert isinstance(result, OrchestratorOutput), result
    assert result.agents_invoked == ["word_counter"]
    assert result.agent_results[0].output == {"words": 4, "after": [], "answer": "4 words"}
    assert result.response == "4 words"
    mine = [(e.type, e.title) for e in items[:-1] if isinstance(e, Event) and e.source == "word_counter"]
    assert mine[:2] == [(EventType.THINKING, "counting words"), (EventType.ACTION, "count done")]


async def test_a_pack_of_graphs_receives_the_results_it_depends_on(tmp_path: Path) -> None:
    """Registered through a `Pack`, planned by its intent table after echo."""
    counter = word_counter(one_node_graph(count))
    table = tmp_path / "intents.yaml"
    table.write_text(
        "intents:\n  echo_then_count:\n    examples: ['echo these words and count them']\n    tasks:\n"
        "      - {agent: echo, priority: 1, parallel_group: 1}\n      - {agent: word_counter, priority: 2}\n"
    )
    packs = Packs([Pack(name="graphs", agents=[counter], intents=[table])])
    registry = packs.registry()
    registry.register(load_registry("echo").get("echo"))
    settings = Settings(data_dir=tmp_path, store_events=False)
    async with Orchestrator(settings, registry=registry, packs=packs) as orchestrator:
        result = await orchestrator.ask("echo these words and count them")
    assert isinstance(result, OrchestratorOutput), result
    assert [r.agent for r in result.agent_results] == ["echo", "word_counter"]
    assert result.agent_results[1].output["after"] == ["echo"]


async def test_a_graph_that_raises_gives_the_agents_structured_error(tmp_path: Path) -> None:
    async def broken(state: WordState) -> dict[str, Any]:
        raise ValueError("no dictionary loaded")

    counter = word_counter(one_node_graph(broken, "lookup"))
    async with orchestrator_with(tmp_path, counter) as orchestrator:
        result = await orchestrator.ask("count the words in: hello there")
    assert isinstance(result, OrchestratorErrorResponse)
    assert result.error_category == "all_agents_failed"
    error = result.partial_results[0].errors[0] if result.partial_results else None
    assert error is not None and error.error_type == "graph_error"
    assert error.details == {"exception": "ValueError", "node": "lookup"}
    assert "in node 'lookup': ValueError: no dictionary loaded" in error.message
    assert "Traceback" not in result.model_dump_json()


async def test_a_graph_without_the_answer_key_says_what_it_has(tmp_path: Path) -> None:
    counter = word_counter(one_node_graph(count), output_key="reply")
    async with orchestrator_with(tmp_path, counter) as orchestrator:
        result = await orchestrator.ask("count the words in: hello there")
    assert isinstance(result, OrchestratorErrorResponse) and result.partial_results
    error = result.partial_results[0].errors[0]
    assert error.error_type == "graph_output_missing"
    assert re.search(r"no 'reply'; it has: after, answer, question, words", error.message)


async def test_a_graph_that_hangs_is_cancelled_by_the_task_timeout(tmp_path: Path) -> None:
    stopped = asyncio.Event()

    async def hang(state: WordState) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return {}

    counter = word_counter(one_node_graph(hang, "wait"), timeout_ms=300)
    async with orchestrator_with(tmp_path, counter) as orchestrator:
        start = time.perf_counter()
        result = await orchestrator.ask("count the words in: hello there")
        took = time.perf_counter() - start
    assert isinstance(result, OrchestratorErrorResponse) and result.partial_results
    response = result.partial_results[0]
    assert response.status is ExecutionStatus.TIMEOUT
    assert response.errors[0].error_type == "timeout" and "300 ms" in response.errors[0].message
    assert stopped.is_set()  # the graph's node was cancelled, not left running
    assert took < 5


def test_a_compiled_graph_is_required() -> None:
    with pytest.raises(TypeError, match=r"graph.compile\(\)"):
        word_counter(StateGraph(WordState))


# -- the documentation's examples run as written -------------------------------------------


def test_the_documented_examples_run(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CONCERTO_AGENTS", "echo")
    text = (ROOT / "docs" / "protocols" / "langgraph.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    for block in blocks:
        exec(compile(block, "docs/protocols/langgraph.md", "exec", dont_inherit=True), {"__name__": "__main__"})
    printed = capfd.readouterr().out
    expected = re.findall(r"```text\n(.*?)```", text, re.S)
    for lines in expected:
        for line in lines.strip().splitlines():
            assert line in printed


async def test_a_chat_graph_with_a_checkpointer_answers_from_its_last_message(tmp_path: Path) -> None:
    """`MessagesState` in and out; a checkpointer gets a thread per task."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import MessagesState

    def reply(state: MessagesState) -> dict[str, Any]:
        said = str(state["messages"][-1].content)
        return {"messages": [AIMessage(content=f"{len(said.split(':', 1)[-1].split())} words")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    saver = InMemorySaver()
    counter = word_counter(builder.compile(checkpointer=saver), input_key="messages", output_key="messages")
    async with orchestrator_with(tmp_path, counter) as orchestrator:
        result = await orchestrator.ask("count the words in: one two three")
    assert isinstance(result, OrchestratorOutput), result
    assert result.response == "3 words"
    messages = result.agent_results[0].output["messages"]
    assert [m["type"] for m in messages] == ["human", "ai"] and messages[-1]["content"] == "3 words"
    [thread] = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    assert thread == f"{result.query_id}:{result.agent_results[0].task_id}"
