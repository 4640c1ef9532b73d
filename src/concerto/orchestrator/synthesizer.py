"""Synthesizer: agent results become one answer, by output format and user expertise.

Deterministic templates by default: each agent states its result in `summary`, and the
template arranges those sentences, the findings and the errors for the reader. With an
LLM configured, it writes the prose from the same material; if it fails, the template
answers and a note says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from concerto.agents.base import AgentInfo
from concerto.contracts.common import ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.orchestrator import OrchestratorInput
from concerto.llm.base import LLMClient, LLMError, Message, Usage


@dataclass
class Synthesis:
    response: str
    response_type: str
    key_findings: list[str]
    follow_up_questions: list[str]
    notes: list[str] = field(default_factory=list)
    answer_values: list[str | int | float] | None = None


def unanswered(r: AgentDispatchResponse) -> list[str]:
    """The parts of the question a completed result says it does not cover, as sentences."""
    if r.status is not ExecutionStatus.COMPLETED:
        return []
    return [f"Not answered: {e.message.rstrip('.')}." for e in r.errors if "part" in e.details]


def answer_values(
    ok: list[AgentDispatchResponse], writer: AgentDispatchResponse | None
) -> list[str | int | float] | None:
    """The answer's values: the writer's when an agent wrote the answer from the others', else
    those of every completed result that has some, in plan order (the order the question asked
    its parts); None when no result gives values (a narrative answer)."""
    if writer is not None:
        return writer.answer_values
    given = [r.answer_values for r in ok if r.answer_values is not None]
    return [v for values in given for v in values] if given else None


def _label(agent: str) -> str:
    return agent.replace("_", " ")


class Synthesizer:
    """Builds the response text, key findings and follow-up questions."""

    def __init__(self, infos: dict[str, AgentInfo], llm: LLMClient | None = None) -> None:
        self.infos = infos
        self.llm = llm

    async def synthesize(
        self, query: OrchestratorInput, results: list[AgentDispatchResponse], usage: Usage | None = None
    ) -> Synthesis:
        synthesis = self.template(query, results)
        if self.llm is not None and synthesis.response_type != "explanation":  # an explainer already wrote it
            try:
                synthesis.response = await self._llm_text(query, results, synthesis, usage)
            except LLMError as exc:
                synthesis.notes.append(f"LLM synthesis failed ({exc}); answered from templates")
        return synthesis

    def template(self, query: OrchestratorInput, results: list[AgentDispatchResponse]) -> Synthesis:
        ok = [r for r in results if r.status is ExecutionStatus.COMPLETED]
        failed = [r for r in results if r.status is not ExecutionStatus.COMPLETED]
        sentences = [r.summary or f"{_label(r.agent)} returned {len(r.output)} field(s)." for r in ok]
        problems = [self._problem(r) for r in failed]
        gaps = [sentence for r in ok for sentence in unanswered(r)]
        findings = [f for r in ok for f in r.key_findings if f not in gaps][: max(10 - len(gaps), 3)] + gaps
        fmt, who = query.output_format, query.user_expertise

        if fmt == "brief":
            text = " ".join(sentences[:2] + gaps[:1]) or (problems[0] if problems else "No answer.")
        elif fmt == "structured":
            lines = []
            for r in results:
                mark = "✓" if r.status is ExecutionStatus.COMPLETED else "✗"
                body = r.summary if r.status is ExecutionStatus.COMPLETED else self._problem(r)
                lines.append(f"{mark} {_label(r.agent)}: {body}")
                lines += [f"    ! {gap}" for gap in unanswered(r)]
                if who != "executive":
                    lines += [f"    - {f}" for f in r.key_findings[:5]]
                if who == "data_scientist":
                    lines.append(
                        f"    ({r.status.value}, {r.total_latency_ms:.1f} ms"
                        f"{', via fallback' if r.used_fallback else ''})"
                    )
            text = "\n".join(lines)
        else:  # narrative
            parts = list(sentences) + gaps
            if problems:
                lead = "However, " if sentences else ""
                parts.append(lead + " ".join(problems))
            if who == "data_scientist" and ok:
                parts.append(
                    "Answered by " + ", ".join(f"{_label(r.agent)} in {r.total_latency_ms:.0f} ms" for r in ok) + "."
                )
            elif who == "analyst" and len(findings) > len(sentences) + len(gaps):
                details = [f for f in findings[len(sentences) :] if f not in gaps][:4]
                parts.append("Details: " + "; ".join(f.rstrip(".") for f in details) + ".")
            text = " ".join(parts)
        writer = self._writer(results)
        if writer is not None:
            written = writer.summary or ""
            rest = [p for p in problems if not p.startswith(_label(writer.agent).capitalize())]
            text = "\n\n".join([written, *gaps, *rest]) if fmt != "brief" else written
        return Synthesis(
            response=text,
            response_type="explanation" if writer is not None else "direct" if len(results) == 1 else "synthesized",
            key_findings=findings,
            follow_up_questions=self._follow_ups(results),
            answer_values=answer_values(ok, writer),
        )

    def _writer(self, results: list[AgentDispatchResponse]) -> AgentDispatchResponse | None:
        """The completed result of an agent that writes the answer from the others' (an explainer
        that ran after them), if there is one: its text is the response."""
        if len(results) < 2:
            return None
        for r in reversed(results):
            info = self.infos.get(r.agent)
            if info is not None and info.synthesizes and r.status is ExecutionStatus.COMPLETED and r.summary:
                return r
        return None

    @staticmethod
    def _problem(r: AgentDispatchResponse) -> str:
        if not r.errors:
            return f"{_label(r.agent)} did not answer ({r.status.value})."
        e = r.errors[-1]
        tip = f" {e.suggestion}" if e.suggestion else ""
        message = e.message.rstrip(".")
        return f"{_label(r.agent).capitalize()} could not answer: {message}.{tip}"

    def _follow_ups(self, results: list[AgentDispatchResponse]) -> list[str]:
        out: list[str] = []
        for r in results:
            for suggestion in (e.suggestion for e in r.errors if e.suggestion):
                out.append(suggestion)
            info = self.infos.get(r.agent)
            if info:
                out += info.examples[:2]
        return list(dict.fromkeys(out))[:5]

    async def _llm_text(
        self,
        query: OrchestratorInput,
        results: list[AgentDispatchResponse],
        draft: Synthesis,
        usage: Usage | None,
    ) -> str:
        assert self.llm is not None
        material = [
            {
                "agent": r.agent,
                "status": r.status.value,
                "summary": r.summary,
                "findings": r.key_findings,
                "errors": [e.message for e in r.errors],
            }
            for r in results
        ]
        messages = [
            Message(
                role="system",
                content=(
                    f"Answer the user's question for a reader who is a(n) {query.user_expertise}, in "
                    f"{query.output_format} form, using only these agent results: {material}. Do not invent "
                    "numbers. If an agent failed, say so."
                ),
            ),
            Message(role="user", content=query.query),
        ]
        from concerto.llm.structured import complete_text

        reply = await complete_text(self.llm, messages, usage=usage, purpose="synthesize", max_tokens=400)
        text = reply.text.strip()
        if not text:
            raise LLMError("the LLM returned an empty answer", kind="invalid_output")
        return text
