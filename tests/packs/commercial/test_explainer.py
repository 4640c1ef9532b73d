"""explainer: the narrative from earlier results, by audience and format, through the seed's
synthesis handoff; an LLM's text only when its numbers are the results' own."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from concerto.agents.base import AgentContext, AgentFailure
from concerto.contracts.handoff import OrchestratorSynthesis
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.packs.commercial.explainer.agent import ExplainerAgent
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import ScriptedLLM

PREVIOUS = [
    {
        "agent": "causal_impact",
        "summary": "Increased sampling adds 2.4 new Rx per HCP-month.",
        "result": {
            "ate": 2.41,
            "confidence_interval": [2.1, 2.7],
            "assumptions": {"adjustment_set": ["decile", "specialty"], "outside_overlap": 0.0},
            "recommendations": ["Consider increasing sampling budget for high-potential HCPs"],
        },
        "key_findings": ["Positive causal effect of 2.41 additional Rx per HCP", "Effect is significant (p < 0.001)"],
    },
    {
        "agent": "gap_analyzer",
        "summary": "Three territories hold 40% of the gap.",
        "result": {"recommendations": ["Prioritise T05, T12 and T19"]},
        "key_findings": ["Top 3 territories have 40% gap vs potential"],
    },
]


async def explain(
    settings: Settings, resources: Resources, llm: Any = None, previous: list[Any] | None = None, **query: Any
) -> Any:
    agent = ExplainerAgent(settings, resources)
    q = OrchestratorInput(query="Summarize the findings for executive presentation", **query)
    context = AgentContext(query=q, now=datetime(2026, 11, 15, tzinfo=UTC), settings=settings, resources=resources)
    context.llm = llm
    payload = {"request": q.query, "previous_results": PREVIOUS if previous is None else previous}
    return await agent.run(context, payload)


async def test_the_synthesis_handoff_names_every_source_agent(settings: Settings, resources: Resources) -> None:
    result = await explain(settings, resources, user_expertise="executive", output_format="brief")
    handoff = OrchestratorSynthesis.model_validate(result.output["synthesis_request"])
    assert handoff.source_agents == ["causal_impact", "gap_analyzer"]
    assert handoff.payload.user_expertise == "executive" and handoff.payload.output_format == "brief"
    assert handoff.payload.analysis_results[1].key_findings == ["Top 3 territories have 40% gap vs potential"]
    assert OrchestratorSynthesis.from_yaml(handoff.to_yaml()) == handoff


@pytest.mark.parametrize(
    ("expertise", "fmt", "present", "absent"),
    [
        ("executive", "brief", ["2.41", "40%"], ["adjustment"]),
        ("executive", "narrative", ["Recommended: Consider increasing sampling"], ["adjustment"]),
        ("analyst", "structured", ["## Causal impact", "- Top 3 territories"], ["adjustment"]),
        ("data_scientist", "narrative", ["adjustment_set", "decile"], []),
    ],
)
async def test_audience_and_format_shape_the_text(
    settings: Settings, resources: Resources, expertise: str, fmt: str, present: list[str], absent: list[str]
) -> None:
    result = await explain(settings, resources, user_expertise=expertise, output_format=fmt)
    text = result.output["narrative"]
    for piece in present:
        assert piece in text, (piece, text)
    for piece in absent:
        assert piece not in text, (piece, text)
    assert result.output["written_by"] == "template"
    assert "Prioritise T05, T12 and T19" in result.output["recommendations"]


async def test_nothing_to_explain_says_what_to_ask(settings: Settings, resources: Resources) -> None:
    with pytest.raises(AgentFailure) as failure:
        await explain(settings, resources, previous=[])
    assert failure.value.error_type == "nothing_to_explain"
    assert "comprehensive analysis" in (failure.value.suggestion or "")


async def test_an_llm_text_with_the_results_numbers_is_used(settings: Settings, resources: Resources) -> None:
    llm = ScriptedLLM(["Sampling adds 2.41 new Rx per HCP; three territories hold 40% of the gap."])
    result = await explain(settings, resources, llm=llm)
    assert result.output["written_by"] == "llm"
    assert result.output["narrative"].startswith("Sampling adds 2.41")
    assert "causal_impact" in llm.calls[0][0].content  # the handoff document is the model's material


@pytest.mark.parametrize("reply", ["Sampling adds 7.5 new Rx per HCP.", "   ", LookupError("boom")])
async def test_an_llm_that_invents_numbers_or_fails_falls_back(
    settings: Settings, resources: Resources, reply: Any
) -> None:
    from concerto.llm.base import LLMError

    llm = ScriptedLLM([reply if not isinstance(reply, LookupError) else LLMError("down", kind="unavailable")])
    result = await explain(settings, resources, llm=llm)
    assert result.output["written_by"] == "template"
    assert any("LLM" in note for note in result.output["notes"])
    assert "2.41" in result.output["narrative"]
