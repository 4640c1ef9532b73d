"""explainer: turns other agents' results into a narrative for the requested
`user_expertise` and `output_format`, through the seed's synthesis handoff
(`orchestrator_synthesis`: the source agents, the query and each one's key findings).

Without an LLM the narrative is written from templates: an executive reads the headline and
what to do, an analyst the findings with their uncertainty, a data scientist also the
methods, assumptions and checks. With an LLM configured the model writes it from the same
material, and its text is kept only if every number in it appears in the material (a
model that invents a figure is answered from the templates, and the answer says so). The
templates are in `wording`.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from concerto.agents.base import AgentInfo
from concerto.contracts.handoff import AnalysisResult, OrchestratorSynthesis, SynthesisPayload
from concerto.llm.base import LLMError, Message
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.explainer.wording import details, template

_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:[.,]\d+)*%?")


class ExplainerAgent(CommercialAgent):
    """Explains the results of the tasks it depends on; reads no data itself."""

    uses_data: ClassVar[bool] = False
    info = AgentInfo(
        name="explainer",
        description=(
            "Explains analysis results in plain language for executives, analysts or data scientists: "
            "a narrative, a structured summary or a brief, from the findings of the other agents."
        ),
        capabilities=[
            "Summarise the findings of several analyses for an executive presentation",
            "Explain statistical results (effects, intervals, p-values) in plain language",
            "Write a brief, a narrative or a structured summary for a chosen audience",
        ],
        inputs={
            "source": "The table to analyze (default: the built-in commercial data set)",
            "previous_results": "The results to explain (from the tasks this one depends on)",
            "user_expertise": "executive, analyst or data_scientist",
            "output_format": "narrative, structured or brief",
        },
        outputs={
            "narrative": "The explanation",
            "synthesis_request": "The orchestrator_synthesis handoff it was written from",
        },
        examples=[
            "Summarize the findings for executive presentation",
            "Explain these results in plain language",
            "What do these numbers mean for the brand team?",
            "Give me a brief of the analysis for leadership",
            "Explain the causal analysis to a non-technical audience",
        ],
        default_timeout_ms=45000,
        synthesizes=True,
    )

    async def answer(self, work: Work) -> Answer:
        results = [r for r in work.previous_findings() if r["key_findings"] or r["output"]]
        if not results:
            raise invalid(
                "there are no results to explain: the explainer writes up what other agents found",
                "Ask for an analysis, e.g. 'comprehensive analysis of Kisqali' (causal effects and gaps, explained), "
                "or 'what is the effect of sampling on Kisqali prescriptions?'",
                error_type="nothing_to_explain",
            )
        synthesis = OrchestratorSynthesis(
            source_agents=[str(r["agent"]) for r in results],
            target_agent="explainer",
            payload=SynthesisPayload(
                query=work.request,
                analysis_results=[
                    AnalysisResult(agent=str(r["agent"]), key_findings=list(r["key_findings"])) for r in results
                ],
                user_expertise=work.expertise,
                output_format=work.output_format,
            ),
        )
        text = template(results, work.expertise, work.output_format)
        written_by = "template"
        if work.context.llm is not None:
            try:
                text = await self._llm(work, results, synthesis)
                written_by = "llm"
            except LLMError as exc:
                work.notes.append(f"the LLM's explanation was not used ({exc}); written from templates")
        recommendations = [str(x) for r in results for x in r["output"].get("recommendations") or []]
        return Answer(
            payload={
                "narrative": text,
                "user_expertise": work.expertise,
                "output_format": work.output_format,
                "written_by": written_by,
                "synthesis_request": synthesis.model_dump(mode="json", exclude_none=True),
            },
            summary=text,  # the whole explanation: as a synthesizing agent, its summary is the response
            key_findings=[f for r in results for f in r["key_findings"]][:8],
            recommendations=list(dict.fromkeys(recommendations))[:5],
        )

    async def _llm(self, work: Work, results: list[dict[str, Any]], synthesis: OrchestratorSynthesis) -> str:
        from concerto.llm.structured import complete_text

        assert work.context.llm is not None
        material = synthesis.to_yaml() + "\n" + "\n".join(details(r) for r in results)
        messages = [
            Message(
                role="system",
                content=(
                    f"Write a {work.output_format} explanation for a(n) {work.expertise} of these analysis "
                    f"results. Use only numbers that appear in them; say what is uncertain.\n{material}"
                ),
            ),
            Message(role="user", content=work.request),
        ]
        reply = await complete_text(work.context.llm, messages, purpose="explain", max_tokens=500)
        text = reply.text.strip()
        if not text:
            raise LLMError("the LLM returned an empty explanation", kind="invalid_output")
        invented = sorted(set(_numbers(text)) - set(_numbers(material)))
        if invented:
            made_up = ", ".join(invented[:5])
            raise LLMError(f"the LLM wrote numbers not in the results: {made_up}", kind="invalid_output")
        return text


def _numbers(text: str) -> list[str]:
    return [n.replace("−", "-").replace(",", "").rstrip("%") for n in _NUMBER.findall(text)]
