"""The typed task: each value resolved once, from the one place that wins."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

from concerto.agents.task import PriorResult, TaskInput, prior_result, requested_source
from concerto.contracts.common import ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.orchestrator import OrchestratorInput

SRC = Path(__file__).resolve().parents[2] / "src" / "concerto"
# What the task carries; an agent reading these from `context.query` has two channels again.
TASK_VALUES = {"query", "source", "data_source_id", "parameters", "context", "brand", "prior_analysis_ids"}


def test_the_question_is_the_plan_task_s_request_else_the_user_s() -> None:
    query = OrchestratorInput(query="revenue by region")
    assert TaskInput.build(query).question == "revenue by region"
    assert TaskInput.build(query, request="then explain it").question == "then explain it"


def test_the_source_comes_from_the_task_then_the_fields_then_the_parameters() -> None:
    both = OrchestratorInput(query="q", source="sales", data_source_id="ds-1", parameters={"source": "p"})
    assert requested_source(both) == "sales"
    assert requested_source(both, {"source": "configured"}) == "configured"
    assert requested_source(both, {"data_source_id": "configured"}) == "sales"  # a source beats an id anywhere
    assert requested_source(OrchestratorInput(query="q", data_source_id="A", parameters={"source": "B"})) == "B"
    assert requested_source(OrchestratorInput(query="q"), None, {"source": "read"}) == "read"
    read = TaskInput.build(OrchestratorInput(query="q"), prepared={"source": "read", "k": 1})
    assert read.source == "read" and read.inputs == {"k": 1}
    assert requested_source(OrchestratorInput(query="q", data_source_id="ds-1")) == "ds-1"
    assert requested_source(OrchestratorInput(query="q", parameters={"data_source_id": "p"})) == "p"
    assert requested_source(OrchestratorInput(query="q")) is None
    task = TaskInput.build(both, task_input={"source": "configured", "k": 2})
    assert task.source == "configured" and task.inputs == {"k": 2}  # a source is never an input too


def test_inputs_layer_the_agent_s_reading_the_parameters_and_the_plan_s_input() -> None:
    query = OrchestratorInput(query="q", parameters={"k": 3, "label": "top"})
    task = TaskInput.build(query, prepared={"k": 1, "city": "Seattle"}, task_input={"label": "configured"})
    assert task.inputs == {"k": 3, "city": "Seattle", "label": "configured"}


def test_the_brand_is_a_brand_parameter_else_the_field() -> None:
    assert TaskInput.build(OrchestratorInput(query="q", brand="Kisqali")).brand == "Kisqali"
    given = OrchestratorInput(query="q", brand="Kisqali", parameters={"brand": "Entresto"})
    assert TaskInput.build(given).brand == "Entresto"


def test_the_task_built_without_validation_equals_a_validated_one() -> None:
    query = OrchestratorInput(query="q", source="s", context="Q3", prior_analysis_ids=["a1"], parameters={"k": 3})
    built = TaskInput.build(query, request="r", prepared={"x": 1}, previous=[prior_result(earlier(), "e")])
    assert TaskInput.model_validate(built.model_dump()) == built
    assert built.model_fields_set == set(TaskInput.model_fields)
    assert built.previous[0] == PriorResult(agent="a", task_id="T1", task="e", summary="s", result={"n": 1})
    assert pickle.loads(pickle.dumps(built)) == built  # the Ray backend sends it
    assert built.model_copy(update={"question": "x"}).question == "x" and built.question == "r"
    plain = TaskInput.build(OrchestratorInput(query="q"))
    assert plain == TaskInput(question="q")


def earlier() -> AgentDispatchResponse:
    return AgentDispatchResponse(
        agent="a", task_id="T1", status=ExecutionStatus.COMPLETED, summary="s", output={"n": 1}
    )


def test_no_agent_reads_what_its_task_carries_from_the_question() -> None:
    """`<anything>.query.<value>` for a value the task carries is a second channel (issue 27):
    in the packs, the MCP adapter, the LangGraph adapter and the data layer's agents' helpers.
    (`ready` and `first_use` get the question itself, not a task: they use `named_source`.)"""
    where = [SRC / "packs", SRC / "mcp", SRC / "protocols" / "langgraph.py", SRC / "cluster"]
    found = []
    for path in (p for w in where for p in ([w] if w.is_file() else w.rglob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in TASK_VALUES
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "query"
            ):
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {ast.unparse(node)}")
    assert not found, "read it from the task instead: " + ", ".join(found)
