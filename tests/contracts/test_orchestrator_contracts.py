"""Validation rules of the orchestrator contracts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from concerto.agents.task import TaskInput
from concerto.contracts import AgentDispatchRequest, IntentClassification, OrchestratorInput


def test_query_limits() -> None:
    assert OrchestratorInput(query="  hi  ").query == "hi"
    assert len(OrchestratorInput(query="x" * 499).query) == 499
    for bad in ("", " \n ", "x" * 500):
        with pytest.raises(ValidationError):
            OrchestratorInput(query=bad)


def test_unknown_fields_and_bad_choices_are_refused() -> None:
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", output_format="poem")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", surprise=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", max_latency_ms=0)


def test_dispatch_request_defaults_match_the_spec() -> None:
    req = AgentDispatchRequest(agent="echo")
    assert (req.priority, req.timeout_ms, req.wait_for_group) == (5, 30000, True)
    assert [k.value for k in req.fallback_on] == ["timeout", "error"]
    with pytest.raises(ValidationError):
        AgentDispatchRequest(agent="echo", priority=11)


def test_confidence_bounds() -> None:
    with pytest.raises(ValidationError):
        IntentClassification(primary_intent="x", confidence=1.5)


def test_the_input_takes_exactly_its_json_types() -> None:
    """Strict: text for text, numbers for numbers (the API's OpenAPI document says so)."""
    for bad in ({"max_latency_ms": "5000"}, {"max_latency_ms": True}, {"brand": 3}, {"query_id": 12}):
        with pytest.raises(ValidationError):
            OrchestratorInput.model_validate({"query": "q", **bad})
    assert OrchestratorInput.model_validate({"query": "q", "max_latency_ms": 662.0}).max_latency_ms == 662


def test_per_question_parameters() -> None:
    plain = TaskInput.build(OrchestratorInput(query="q"))
    assert (plain.inputs, plain.source, plain.business_context) == ({}, None, None)
    query = OrchestratorInput(query="q", source="sales", context="Q3", parameters={"treatment": "samples", "k": 3})
    full = TaskInput.build(query)
    assert (full.inputs, full.source, full.business_context) == ({"treatment": "samples", "k": 3}, "sales", "Q3")
    for bad in ({"request": "x"}, {"previous_results": []}, {"9lives": 1}, {"has space": 1}):
        with pytest.raises(ValidationError):
            OrchestratorInput(query="q", parameters=bad)
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", parameters={f"p{i}": i for i in range(33)})
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", context="x" * 4001)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"query": "echo: \ud800"}, "query: the text has a character UTF-8 cannot encode (U+D800 at character 7"),
        ({"query": "hi", "source": "s\udcff"}, "source: the text has a character UTF-8 cannot encode (U+DCFF at"),
        ({"query": "hi", "context": "\udfff"}, "context:"),
        ({"query": "hi", "prior_analysis_ids": ["a", "\ud800"]}, "prior_analysis_ids: the text at [1] has"),
        ({"query": "hi", "conversation_history": [{"role": "user", "content": "\ud800"}]}, "the text at [0].content"),
        ({"query": "hi", "parameters": {"k": {"\udc80": 1}}}, "the text at k.\\udc80 (its name) has"),
    ],
)
def test_text_that_cannot_be_encoded_is_refused_in_any_field(fields: dict[str, object], said: str) -> None:
    """A lone surrogate (JSON's "\\ud800", or a command line's byte that is not UTF-8) cannot be
    embedded, stored or sent back as JSON: the contract refuses it, so every surface does."""
    with pytest.raises(ValidationError) as caught:
        OrchestratorInput.model_validate(fields)
    from concerto.orchestrator.engine import validation_message

    message = validation_message(caught.value.errors())
    assert said in message and "send text that is valid Unicode" in message
    message.encode("utf-8")  # the message itself can be sent back


def test_a_command_lines_undecodable_byte_is_named() -> None:
    text = b"echo: \xff".decode("utf-8", "surrogateescape")
    with pytest.raises(ValidationError, match="or the byte 0xFF that is not UTF-8"):
        OrchestratorInput(query=text)


def test_paired_surrogates_and_any_script_are_text() -> None:
    assert OrchestratorInput(query="echo: 😀 日本語 \u200b", parameters={"k": {"ключ": ["é"]}}).query.startswith(
        "echo: 😀"
    )
    assert OrchestratorInput.model_validate_json('{"query": "echo: \\ud83d\\ude00"}').query == "echo: 😀"


async def test_the_python_api_answers_the_error_contract(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from concerto.agents.registry import AgentRegistry
    from concerto.contracts import OrchestratorErrorResponse
    from concerto.orchestrator.engine import Orchestrator
    from concerto.settings import Settings
    from concerto.testing import fake_agent

    greeter = fake_agent("greeter", examples=["say hello to me"])
    async with Orchestrator(Settings(data_dir=tmp_path, store_events=False), registry=AgentRegistry([greeter])) as o:
        refused = await o.ask("say hello to me \ud800")
        assert isinstance(refused, OrchestratorErrorResponse) and refused.error_category == "invalid_input"
        refused.model_dump_json()  # serialisable: nothing of the text in it
        events = [e async for e in o.stream({"query": "say hello \udcff"})]
        assert isinstance(events[-1], OrchestratorErrorResponse) and events[-1].error_category == "invalid_input"
