"""The whole flow: question → route → plan → execute → synthesize, with events and errors."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from concerto.agents.base import AgentContext, AgentFailure
from concerto.contracts.events import Event, EventType, QueryState
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.llm.base import LLMError
from concerto.testing import ScriptedLLM, fake_agent

WEATHER = dict(
    description="Current temperature and weather conditions in a US city",
    examples=["what's the temperature in Denver?"],
)
CLOCK = dict(description="Current local date and time in a US city", examples=["what time is it in Chicago?"])


def agents(weather_delay: float = 0.0, weather_fail: BaseException | None = None):  # type: ignore[no-untyped-def]
    return (
        fake_agent("weather", summary="It is 61°F in Seattle.", delay_s=weather_delay, fail=weather_fail, **WEATHER),  # type: ignore[arg-type]
        fake_agent("clock", summary="It is 9:00 in Seattle.", **CLOCK),  # type: ignore[arg-type]
    )


async def test_two_agents_answer_one_question(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    orch = make_orchestrator(*agents())
    out = await orch.ask("what's the weather and the time in Seattle?")
    assert isinstance(out, OrchestratorOutput)
    assert set(out.agents_invoked) == {"weather", "clock"}
    assert "61°F" in out.response and "9:00" in out.response
    assert out.response_type == "synthesized"
    assert {"routing_ms", "planning_ms", "execution_ms", "synthesis_ms"} <= set(out.breakdown)
    assert out.intent_classification.classification_method == "semantic"


async def test_now_reaches_every_agent(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    seen: list[datetime] = []
    clock = fake_agent("clock", on_run=lambda ctx, p: seen.append(ctx.now), **CLOCK)  # type: ignore[arg-type]
    fixed = datetime(2025, 3, 9, 8, 30, tzinfo=UTC)
    await make_orchestrator(clock).ask("what time is it in Chicago?", now=fixed)
    assert seen == [fixed]


async def test_states_and_steps_are_emitted_in_order(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    orch = make_orchestrator(*agents())
    items = [i async for i in orch.stream("what time is it in Chicago?")]
    events = [i for i in items if isinstance(i, Event)]
    assert isinstance(items[-1], OrchestratorOutput)
    states = [e.state for e in events if e.type is EventType.STATE]
    assert states == [
        QueryState.RECEIVED,
        QueryState.ANALYZING,
        QueryState.PLANNED,
        QueryState.DISPATCHING,
        QueryState.PROCESSING,
        QueryState.AGGREGATING,
        QueryState.COMPLETED,
    ]
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert {EventType.RECEIVED, EventType.THINKING, EventType.ACTION, EventType.RESULT} <= {e.type for e in events}


@pytest.mark.parametrize("question", ["", "   ", "x" * 600])
async def test_bad_questions_get_the_error_contract(make_orchestrator, question: str) -> None:  # type: ignore[no-untyped-def]
    out = await make_orchestrator(*agents()).ask(question)
    assert isinstance(out, OrchestratorErrorResponse)
    assert out.error_category == "invalid_input" and out.status.value == "failed"
    assert "question" in out.error_message


async def test_no_agent_fits_says_so_and_suggests(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    out = await make_orchestrator(*agents()).ask("compose a sonnet about cheese")
    assert isinstance(out, OrchestratorErrorResponse) and out.error_category == "classification_failed"
    assert "No agent can answer" in out.error_message
    assert "what time is it in Chicago?" in out.alternative_queries


async def test_one_failing_agent_leaves_the_other(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    orch = make_orchestrator(
        *agents(
            weather_fail=AgentFailure("provider unreachable", error_type="unavailable", suggestion="Try again later.")
        )
    )
    out = await orch.ask("what's the weather and the time in Seattle?")
    assert isinstance(out, OrchestratorOutput)
    assert "9:00" in out.response and "provider unreachable" in out.response
    assert "Try again later." in out.follow_up_questions


async def test_all_agents_failed(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    orch = make_orchestrator(*agents(weather_fail=RuntimeError("boom")))
    out = await orch.ask("what's the temperature in Denver?")
    assert isinstance(out, OrchestratorErrorResponse) and out.error_category == "all_agents_failed"
    assert out.partial_results and out.partial_results[0].errors[0].message.startswith("weather failed")


async def test_deadline_expires_mid_run(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    orch = make_orchestrator(*agents(weather_delay=5))
    out = await orch.ask({"query": "what's the weather and the time in Seattle?", "max_latency_ms": 300})
    assert isinstance(out, OrchestratorOutput)
    statuses = {r.agent: r.status.value for r in out.agent_results}
    assert statuses == {"weather": "cancelled", "clock": "completed"}
    only_slow = await make_orchestrator(*agents(weather_delay=5)).ask(
        {"query": "what's the temperature in Denver?", "max_latency_ms": 200}
    )
    assert isinstance(only_slow, OrchestratorErrorResponse) and only_slow.error_category == "timeout"
    assert only_slow.retry_recommended


async def test_llm_synthesis_and_its_fallback(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    orch = make_orchestrator(*agents(), llm=ScriptedLLM(["Seattle: 61°F at 9:00."]))
    out = await orch.ask("what time is it in Chicago?")
    assert isinstance(out, OrchestratorOutput) and out.response == "Seattle: 61°F at 9:00."
    assert out.breakdown["llm"]["calls"] == 1
    broken = make_orchestrator(*agents(), llm=ScriptedLLM([LLMError("timed out", kind="timeout")]))
    out = await broken.ask("what time is it in Chicago?")
    assert isinstance(out, OrchestratorOutput) and out.response == "It is 9:00 in Seattle."
    assert any("LLM synthesis failed" in n for n in out.notes)


@pytest.mark.parametrize(
    ("fmt", "who"),
    [
        ("brief", "executive"),
        ("structured", "analyst"),
        ("structured", "data_scientist"),
        ("narrative", "data_scientist"),
    ],
)
async def test_output_formats(make_orchestrator, fmt: str, who: str) -> None:  # type: ignore[no-untyped-def]
    out = await make_orchestrator(*agents()).ask(
        {"query": "what's the weather and the time in Seattle?", "output_format": fmt, "user_expertise": who}
    )
    assert isinstance(out, OrchestratorOutput) and "61°F" in out.response
    if fmt == "structured":
        assert out.response.count("\n") >= 1 and "✓" in out.response
    if who == "data_scientist":
        assert "ms" in out.response


async def test_many_questions_in_flight(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    orch = make_orchestrator(*agents())
    outs = await asyncio.gather(*(orch.ask("what time is it in Chicago?") for _ in range(50)))
    assert all(isinstance(o, OrchestratorOutput) for o in outs)
    assert len({o.query_id for o in outs}) == 50


async def test_agent_events_carry_source_and_step(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    async def noisy(ctx: AgentContext, payload: object) -> None:
        await ctx.emit(EventType.THINKING, "Looking things up", {"n": 1}, step=3)

    def on_run(ctx: AgentContext, payload: object) -> None:
        asyncio.get_running_loop().create_task(noisy(ctx, payload))

    orch = make_orchestrator(fake_agent("clock", delay_s=0.01, on_run=on_run, **CLOCK))  # type: ignore[arg-type]
    events = [i async for i in orch.stream("what time is it in Chicago?") if isinstance(i, Event)]
    mine = [e for e in events if e.source == "clock" and e.title == "Looking things up"]
    assert mine and mine[0].step == 3 and mine[0].task_id


async def test_intent_file_routes_by_its_examples_and_plans_from_its_table(make_orchestrator, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A named intent from CONCERTO_INTENTS_FILE: routed by its examples, planned as its table says."""
    order: list[str] = []
    gather = fake_agent("gather", summary="Collected 3 figures.", on_run=lambda c, p: order.append("gather"))
    explain = fake_agent(
        "explain",
        summary="The figures rose.",
        on_run=lambda c, t: order.append(f"explain saw {[r.agent for r in t.previous]}"),
    )
    table = tmp_path / "intents.yaml"
    table.write_text(
        "intents:\n"
        "  quarterly_review:\n"
        "    description: A quarterly business review of the figures, explained\n"
        "    examples: ['prepare the quarterly business review']\n"
        "    tasks:\n"
        "      - {agent: gather, priority: 1, parallel_group: 1, timeout_ms: 2000}\n"
        "      - {agent: explain, priority: 2, timeout_ms: 2000}\n"
    )
    orch = make_orchestrator(gather, explain, intents_file=table)
    out = await orch.ask("please prepare our quarterly business review")
    assert isinstance(out, OrchestratorOutput)
    assert out.intent_classification.primary_intent == "quarterly_review"
    assert out.breakdown["plan"]["source"] == "table" and out.breakdown["plan"]["strategy"] == "sequential"
    assert order == ["gather", "explain saw ['gather']"]
    assert out.response == "Collected 3 figures. The figures rose."


async def test_a_reader_that_stops_early_cancels_the_question(make_orchestrator) -> None:  # type: ignore[no-untyped-def]
    finished: list[bool] = []
    slow = fake_agent("clock", delay_s=2, on_run=lambda c, p: finished.append(True), **CLOCK)  # type: ignore[arg-type]
    orch = make_orchestrator(slow)
    stream = orch.stream("what time is it in Chicago?")
    first = await anext(stream)
    assert isinstance(first, Event)
    await stream.aclose()  # e.g. the SSE client disconnected
    await asyncio.sleep(2.2)
    assert finished == []  # the agent was cancelled, not left running to completion
