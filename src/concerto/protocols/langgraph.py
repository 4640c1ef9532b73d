"""LangGraph both ways (the optional `langgraph` extra): Concerto as a node or subgraph of a
LangGraph graph, and a compiled LangGraph graph as a Concerto agent.

Concerto in LangGraph:
- `concerto_node(orchestrator)`: an async node that answers the state's question with the
  whole orchestrator (route, plan, execute, synthesize) and writes every transparency event
  to LangGraph's custom stream (`graph.astream(..., stream_mode="custom")`);
- `concerto_subgraph(orchestrator)`: that node as a compiled graph, to add to a parent graph;
- `agent_node(orchestrator, "kpi")`: one named agent as a node (`Orchestrator.ask(agent=...)`:
  no routing, one task, the same contracts).

Every node returns the same state update (the keys are configurable):
- `answer`: the answer text, None when it failed;
- `result`: the `OrchestratorOutput` when it succeeded, as a JSON-ready dict (checkpointers
  and remote streams carry it as it is);
- `error`: the `OrchestratorErrorResponse` when it failed, else None.
A bad question never raises through the graph: it comes back in `error`.

LangGraph in Concerto: `langgraph_agent(graph, name=..., description=..., examples=[...])`
returns an `Agent` class whose `run` streams the graph (each node's update and each custom
chunk becomes an agent event), stops it when the task is cancelled (the executor's timeout,
the question's deadline) and maps its final state to an `AgentResult`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypedDict, TypeVar, cast

from pydantic import BaseModel

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult
from concerto.agents.task import TaskInput
from concerto.contracts.events import Event, EventType
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator

if TYPE_CHECKING:
    from langgraph.pregel.protocol import PregelProtocol

log = logging.getLogger(__name__)

INSTALL = "pip install 'concerto[langgraph]'"
EVENT_KEY = "concerto_event"  # the custom-stream chunk: {"concerto_event": Event as a dict}
NODE_NAME = "concerto"

Clock = Callable[[], datetime]
Writer = Callable[[Any], None]
T = TypeVar("T")


class Node(Protocol):
    """A LangGraph node function: the state (any TypedDict or mapping) to a state update."""

    def __call__(self, state: Any) -> Awaitable[dict[str, Any]]: ...


class ConcertoInput(TypedDict, total=False):
    """What the subgraph reads: the question and, optionally, other `OrchestratorInput` fields."""

    question: str
    concerto_input: dict[str, Any]


class ConcertoOutput(TypedDict, total=False):
    """What the subgraph writes back (see the module's docstring)."""

    answer: str | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None


class ConcertoState(ConcertoInput, ConcertoOutput, total=False):
    """The subgraph's state: its input and output keys together."""


@dataclass(frozen=True)
class _Keys:
    question: str
    input: str
    answer: str
    result: str
    error: str


def _require_langgraph() -> None:
    try:
        import langgraph.graph  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"the LangGraph adapters need the extra: {INSTALL}") from exc


# -- Concerto in LangGraph ---------------------------------------------------------------


def concerto_node(
    orchestrator: Orchestrator,
    *,
    question_key: str = "question",
    input_key: str = "concerto_input",
    answer_key: str = "answer",
    result_key: str = "result",
    error_key: str = "error",
    clock: Clock | None = None,
    agent: str | None = None,
) -> Node:
    """An async LangGraph node answering `state[question_key]` with the whole orchestrator
    (`agent`: with that agent alone, as `agent_node`).

    `state[input_key]`, when present, holds further `OrchestratorInput` fields (`source`,
    `output_format`, `conversation_history`, ...). Events go to the custom stream as
    `{"concerto_event": {...}}`; the update holds `answer_key`, `result_key` and
    `error_key`. `clock` fixes the time agents see (tests, replays).
    """
    _require_langgraph()
    keys = _Keys(question_key, input_key, answer_key, result_key, error_key)

    async def concerto(state: Mapping[str, Any]) -> dict[str, Any]:
        query = _query(state, keys)
        if isinstance(query, OrchestratorErrorResponse):
            return _update(keys, None, None, query)
        write = _stream_writer()
        outcome: OrchestratorOutput | OrchestratorErrorResponse | None = None
        async for item in orchestrator.stream(query, now=clock() if clock else None, agent=agent):
            if isinstance(item, Event):
                write({EVENT_KEY: item.model_dump(mode="json")})
            else:
                outcome = item
        if isinstance(outcome, OrchestratorOutput):
            return _update(keys, outcome.response, outcome, None)
        assert outcome is not None  # `stream` always ends with the result
        return _update(keys, None, None, outcome)

    return concerto


def concerto_subgraph(orchestrator: Orchestrator, *, clock: Clock | None = None) -> PregelProtocol[Any, Any, Any, Any]:
    """A compiled graph `START -> concerto -> END` over `ConcertoState`, to add as a node of a
    parent graph whose state shares its keys (`question`, optionally `concerto_input`; it
    writes `answer`, `result`, `error`). A parent with other key names calls `concerto_node`
    with those names instead. The parent sees the events with `astream(...,
    stream_mode="custom", subgraphs=True)`, as for any subgraph.
    """
    _require_langgraph()
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(ConcertoState, input_schema=ConcertoInput, output_schema=ConcertoOutput)
    graph.add_node(NODE_NAME, concerto_node(orchestrator, clock=clock))
    graph.add_edge(START, NODE_NAME)
    graph.add_edge(NODE_NAME, END)
    return cast("PregelProtocol[Any, Any, Any, Any]", graph.compile(name=NODE_NAME))


def agent_node(
    orchestrator: Orchestrator,
    agent: str,
    *,
    question_key: str = "question",
    input_key: str = "concerto_input",
    answer_key: str = "answer",
    result_key: str = "result",
    error_key: str = "error",
    clock: Clock | None = None,
) -> Node:
    """An async LangGraph node that asks one named agent directly (`Orchestrator.ask(agent=...)`):
    no routing, one task, the same contracts and events as `concerto_node` (the output's
    `intent_classification.classification_method` is "direct"; an unknown name is the error
    contract's `invalid_input`, listing the loaded agents).
    """
    node = concerto_node(
        orchestrator,
        question_key=question_key,
        input_key=input_key,
        answer_key=answer_key,
        result_key=result_key,
        error_key=error_key,
        clock=clock,
        agent=agent,
    )
    node.__name__ = agent  # type: ignore[attr-defined]
    return node


def _query(state: Mapping[str, Any], keys: _Keys) -> dict[str, Any] | OrchestratorErrorResponse:
    """The orchestrator's input from the state; a malformed `input` key is the error contract."""
    extra = state.get(keys.input) or {}
    if not isinstance(extra, Mapping):
        message = f"Invalid question — state key '{keys.input}' must be a mapping of OrchestratorInput fields"
        return OrchestratorErrorResponse(error_message=message, error_category="invalid_input")
    return {**extra, "query": state.get(keys.question)}


def _update(keys: _Keys, answer: str | None, result: BaseModel | None, error: BaseModel | None) -> dict[str, Any]:
    return {
        keys.answer: answer,
        keys.result: result.model_dump(mode="json") if result is not None else None,
        keys.error: error.model_dump(mode="json") if error is not None else None,
    }


def _stream_writer() -> Writer:
    """LangGraph's custom-stream writer; a no-op when the node is called outside a graph."""
    from langgraph.config import get_stream_writer

    try:
        return get_stream_writer()
    except RuntimeError:  # "outside of a runnable context": someone awaited the node directly
        return lambda chunk: None


# -- LangGraph in Concerto ---------------------------------------------------------------


@dataclass(frozen=True)
class GraphSpec:
    """How a `LangGraphAgent` runs its graph.

    - `input_key`: the state key that receives the question (the task's request);
    - `output_key`: the final-state key whose value is the answer (a string, or a list of
      messages whose last one's `content` is the answer, as in `MessagesState`);
    - `previous_key`: the key that receives the results of the tasks this one depends on
      (a list of `{"agent", "task", "summary", "result", "key_findings"}`), or None;
    - `output_keys`: the final-state keys copied to the result's output (default: all but
      the keys Concerto filled, unless one is `output_key`);
    - `make_input`: builds the graph's input from the agent's `TaskInput` instead (its
      `question`, `inputs` (the question's parameters), `source`, `previous` ...);
    - `config`: the `RunnableConfig` for every run (e.g. `{"recursion_limit": 10}`); a graph
      compiled with a checkpointer gets `"<query id>:<task id>"` as `thread_id` unless it
      names one.
    """

    graph: Any
    input_key: str = "question"
    output_key: str = "answer"
    previous_key: str | None = "previous_results"
    output_keys: tuple[str, ...] | None = None
    make_input: Callable[[TaskInput], dict[str, Any]] | None = None
    config: Mapping[str, Any] | None = None


class LangGraphAgent(Agent):
    """An agent whose work is a compiled LangGraph graph; subclasses set `info` and `spec`
    (or use `langgraph_agent`)."""

    spec: ClassVar[GraphSpec]

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        spec = self.spec
        graph_input = spec.make_input(task) if spec.make_input else self._input(task)
        state: dict[str, Any] = {}
        try:
            async with aclosing(self._stream(graph_input, context)) as chunks:
                async for mode, data in chunks:
                    if mode == "values" and isinstance(data, Mapping):
                        state = dict(data)
                    elif mode == "updates" and isinstance(data, Mapping):
                        await self._updated(context, data)
                    elif mode == "custom":
                        await context.emit(EventType.THINKING, _title(data), {"data": _jsonable(data)}, step=5)
        except AgentFailure:
            raise
        except Exception as exc:  # the graph's own failure, reported as this agent's error
            node = _failed_node(exc)
            where = f" in node '{node}'" if node else ""
            raise AgentFailure(
                f"the graph failed{where}: {type(exc).__name__}: {exc}"[:500],
                error_type="graph_error",
                details={"exception": type(exc).__name__, **({"node": node} if node else {})},
            ) from exc
        return self._result(state)

    def _input(self, task: TaskInput) -> dict[str, Any]:
        spec = self.spec
        graph_input: dict[str, Any] = {spec.input_key: task.question}
        if spec.previous_key and task.previous:
            graph_input[spec.previous_key] = [p.model_dump() for p in task.previous]
        return graph_input

    def _stream(self, graph_input: dict[str, Any], context: AgentContext) -> AsyncGenerator[tuple[str, Any], None]:
        config: dict[str, Any] = dict(self.spec.config or {})
        if getattr(self.spec.graph, "checkpointer", None):  # a checkpointer needs a thread
            configurable = dict(config.get("configurable") or {})
            configurable.setdefault("thread_id", f"{context.query.query_id}:{context.task_id}")
            config["configurable"] = configurable
        chunks = self.spec.graph.astream(graph_input, config or None, stream_mode=["values", "updates", "custom"])
        return cast("AsyncGenerator[tuple[str, Any], None]", chunks)

    async def _updated(self, context: AgentContext, update: Mapping[str, Any]) -> None:
        """One step's node updates as events; an interrupt stops the run (no one can resume it)."""
        if "__interrupt__" in update:
            raise AgentFailure(
                "the graph stopped to wait for input (an interrupt), which a Concerto agent cannot give",
                error_type="graph_interrupted",
                details={"interrupt": _jsonable(update["__interrupt__"])},
            )
        for node, values in update.items():
            updated = sorted(values) if isinstance(values, Mapping) else []
            await context.emit(EventType.ACTION, f"{node} done", {"node": node, "updated": updated}, step=5)

    def _result(self, state: dict[str, Any]) -> AgentResult:
        spec = self.spec
        filled = {spec.input_key, spec.previous_key} - {spec.output_key}  # `messages` in and out stays
        keys = spec.output_keys if spec.output_keys is not None else [k for k in state if k not in filled]
        output = {k: _jsonable(state[k]) for k in keys if k in state}
        answer = _text(state.get(spec.output_key))
        if answer is None:
            raise AgentFailure(
                f"the graph's final state has no '{spec.output_key}'; it has: {', '.join(sorted(state)) or 'nothing'}",
                error_type="graph_output_missing",
                output=output,
            )
        return AgentResult(output=output, summary=answer)


def langgraph_agent(
    graph: PregelProtocol[Any, Any, Any, Any],
    *,
    name: str,
    description: str,
    examples: Sequence[str] = (),
    input_key: str = "question",
    output_key: str = "answer",
    previous_key: str | None = "previous_results",
    output_keys: Sequence[str] | None = None,
    make_input: Callable[[TaskInput], dict[str, Any]] | None = None,
    config: Mapping[str, Any] | None = None,
    capabilities: Sequence[str] = (),
    pack: str = "langgraph",
    timeout_ms: int | None = None,
    max_concurrency: int | None = None,
) -> type[Agent]:
    """An `Agent` class running `graph` (compiled; a `RemoteGraph` works too). Register it
    like any agent: `Pack(name=..., agents=[cls])`, or `AgentRegistry([cls])` passed as
    `Orchestrator(registry=...)`. The router reaches it by `description` and `examples`.
    See `GraphSpec` for the keys; `timeout_ms` is the task timeout (the setting's default
    otherwise).
    """
    if not callable(getattr(graph, "astream", None)):
        raise TypeError(f"{type(graph).__name__} cannot be run; pass a compiled graph (graph.compile())")
    info = AgentInfo(
        name=name,
        description=description,
        examples=list(examples),
        capabilities=list(capabilities),
        inputs={input_key: "the question"},
        outputs={output_key: "the answer"},
        pack=pack,
        default_timeout_ms=timeout_ms,
        max_concurrency=max_concurrency,
    )
    spec = GraphSpec(
        graph=graph,
        input_key=input_key,
        output_key=output_key,
        previous_key=previous_key,
        output_keys=tuple(output_keys) if output_keys is not None else None,
        make_input=make_input,
        config=config,
    )
    cls_name = "LangGraph_" + name
    return type(cls_name, (LangGraphAgent,), {"info": info, "spec": spec, "__qualname__": cls_name})


_TASK_NOTE = re.compile(r"During task with name '([^']+)'")


def _failed_node(exc: BaseException) -> str | None:
    """The node LangGraph names in the note it adds to a node's exception."""
    for note in getattr(exc, "__notes__", ()):
        if found := _TASK_NOTE.search(note):
            return found.group(1)
    return None


def _text(value: Any) -> str | None:
    """The answer in a final-state value: a string, or the content of the last message."""
    if isinstance(value, list) and value:
        value = value[-1]
    content = getattr(value, "content", value)
    if isinstance(content, str):
        return content
    return None if content is None else json.dumps(_jsonable(content))


def _title(chunk: Any) -> str:
    """An event title for a custom-stream chunk: itself when text, its `title` when it has one."""
    if isinstance(chunk, str):
        return chunk[:200]
    if isinstance(chunk, Mapping) and isinstance(chunk.get("title"), str):
        return str(chunk["title"])[:200]
    return "graph progress"


def _jsonable(value: Any) -> Any:
    """`value` as JSON types (pydantic models dumped, the rest as text) so it survives the
    event log, the SSE stream and the HTTP response."""

    def fallback(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        return dump(mode="json") if callable(dump) else str(obj)

    try:
        return json.loads(json.dumps(value, default=fallback))
    except (TypeError, ValueError):  # keys that are not strings, a cycle, a failing dump
        return str(value)
