"""Human output of the CLI with rich: the answer, the agents' table, live events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from concerto.agents.base import AgentInfo
from concerto.contracts.events import Event, EventType
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput

_out = Console()
_err = Console(stderr=True)
_STYLE = {
    EventType.ERROR: "red",
    EventType.RESULT: "green",
    EventType.ACTION: "cyan",
    EventType.THINKING: "yellow",
    EventType.STATE: "magenta",
    EventType.RECEIVED: "blue",
}


def render_result(result: OrchestratorOutput | OrchestratorErrorResponse) -> None:
    """The answer, then who answered and how long it took."""
    if isinstance(result, OrchestratorErrorResponse):
        _out.print(Panel(result.error_message, title=f"[red]{result.error_category}", border_style="red"))
        if result.alternative_queries:
            _out.print("[bold]Try:[/bold]")
            for q in result.alternative_queries:
                _out.print(f"  • {q}")
        return
    _out.print(Panel(result.response, title="Answer", border_style="green"))
    table = Table(
        title=f"{result.total_latency_ms:.0f} ms · intent {result.intent_classification.primary_intent} "
        f"({result.intent_classification.classification_method})"
    )
    for col in ("agent", "status", "ms", "summary / error"):
        table.add_column(col)
    for r in result.agent_results:
        text = r.summary or "; ".join(e.message for e in r.errors) or ""
        table.add_row(
            r.agent + (" (fallback)" if r.used_fallback else ""), r.status.value, f"{r.total_latency_ms:.1f}", text
        )
    _out.print(table)
    for note in result.notes:
        _out.print(f"[yellow]note:[/yellow] {note}")
    if result.follow_up_questions:
        _out.print("[bold]You could also ask:[/bold] " + " · ".join(result.follow_up_questions[:3]))


def render_agents(infos: list[AgentInfo]) -> None:
    table = Table(title=f"{len(infos)} agents")
    for col in ("name", "pack", "description", "example"):
        table.add_column(col)
    for i in infos:
        table.add_row(i.name, i.pack, i.description, i.examples[0] if i.examples else "")
    _out.print(table)


def render_failures(failures: Sequence[object]) -> None:
    """Packs (or parts of them) that could not be used, one line each on stderr."""
    for failure in failures:
        _err.print(f"[yellow]warning:[/yellow] {failure}", highlight=False)


def render_event(event: Event, console: Any = None) -> None:
    """One line per event on stderr, so stdout stays the answer."""
    style = _STYLE.get(event.type, "white")
    state = f" [{event.state.value}]" if event.state else ""
    (console or _err).print(
        f"[dim]{event.seq:>3}[/dim] [{style}]{event.type.value:<8}[/{style}]"
        f"{state} [bold]{event.source}[/bold] {event.title}",
        highlight=False,
    )
