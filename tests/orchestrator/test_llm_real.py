"""The LLM router, planner and synthesizer through a real OpenAI-compatible server (llama.cpp).

SmolLM2-135M answers poorly: these tests check the protocol, validation and fallbacks —
whatever the model says, the orchestrator returns a valid contract and records the calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _services.llama import LlamaServer
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.llm.base import Usage
from concerto.llm.openai_compat import llm_from_settings
from concerto.orchestrator.planner import Planner
from concerto.orchestrator.router import RouteDecision
from concerto.settings import Settings
from concerto.testing import fake_agent

pytestmark = pytest.mark.llm


@pytest.fixture
def llama(llama_server: LlamaServer) -> LlamaServer:
    return llama_server


def settings_for(server: LlamaServer, tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        llm_base_url=server.base_url,
        llm_model=server.model,
        llm_timeout_s=120,
        llm_max_retries=1,
        store_events=False,
    )


async def test_llm_router_is_asked_and_its_answer_validated(
    llama: LlamaServer,
    make_orchestrator,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    settings = settings_for(llama, tmp_path)
    llm = llm_from_settings(settings)
    assert llm is not None
    weather = fake_agent(
        "weather",
        summary="It is 61°F.",
        description="Current temperature in a US city",
        examples=["what's the temperature in Denver?"],
    )
    clock = fake_agent(
        "clock",
        summary="It is 9:00.",
        description="Current local time in a US city",
        examples=["what time is it in Chicago?"],
    )
    orch = make_orchestrator(weather, clock, llm=llm, llm_timeout_s=120)
    try:
        usage = Usage()
        # Nothing matches this semantically, so the cascade must reach the LLM.
        decision = await orch.router.route("should I pack an umbrella for my trip?", usage)
        assert usage.calls >= 1 and usage.prompt_tokens > 0 and usage.by_purpose.get("route", 0) >= 1
        cls = decision.classification
        assert cls.classification_method in ("llm", "semantic")
        if cls.classification_method == "semantic":  # the model's answer was invalid: said so
            assert any("LLM routing" in note for note in decision.notes)
        else:
            assert set(cls.agents) <= {"weather", "clock"} and cls.agents

        # The planner asks the LLM for a plan over two agents and validates it (or falls back).
        planner = Planner({"weather": weather.info, "clock": clock.info}, {}, llm=llm, llm_retries=1)
        two = RouteDecision(cls.model_copy(update={"agents": ["weather", "clock"], "primary_intent": "weather"}))
        plan, notes = await planner.plan("weather and time in Seattle", two, usage=usage)
        assert usage.by_purpose.get("plan", 0) >= 1
        assert plan.source in ("llm", "default")
        assert {t.agent for t in plan.tasks} <= {"weather", "clock"}
        if plan.source == "default":
            assert notes and "LLM plan rejected" in notes[0]

        # End to end with LLM synthesis: always a valid contract.
        out = await orch.ask("what's the temperature in Denver?")
        assert isinstance(out, OrchestratorOutput | OrchestratorErrorResponse)
        if isinstance(out, OrchestratorOutput):
            assert out.response.strip()
            assert out.breakdown.get("llm", {}).get("calls", 0) >= 1 or out.notes
    finally:
        await llm.aclose()
