"""`concerto ask`: a question answered and printed (text, `--json`, `--yaml`, `--trace`)."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime
from typing import Any

import click

from concerto.cli_input import InputCommand, input_values


def _parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"'{value}' is not an ISO 8601 date-time (e.g. 2025-06-15T12:00:00Z)") from None


@click.command(cls=InputCommand)
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print the output contract as one JSON object.")
@click.option(
    "--yaml",
    "as_yaml",
    is_flag=True,
    help="Print each agent's result as the spec's agent_to_orchestrator YAML handoff (one document per agent).",
)
@click.option("--now", help="Fix the clock every agent sees (ISO 8601), e.g. 2025-06-15T12:00:00Z.")
@click.option("--trace", is_flag=True, help="Show every step (events) live on stderr.")
def ask(question: str, as_json: bool, as_yaml: bool, now: str | None, trace: bool, **fields: Any) -> None:
    """Ask a question and print the answer (exit code 1 if the query failed).

    Every field of the input contract (`OrchestratorInput`) is an option below;
    `--param KEY=VALUE` passes anything else an agent reads from its inputs.

    \b
    Examples:
      concerto ask "show CPU usage for the last hour"
      concerto ask "what time is it in Chicago?" --now 2025-03-09T08:30:00Z --json
      concerto ask "home-loan attrition rate last month" --format brief --trace
      concerto ask "What's the impact of increased sampling on Kisqali prescriptions?" --yaml
    """
    fixed_now = _parse_now(now)
    payload: dict[str, Any] = {"query": question, **input_values(fields)}
    started = datetime.now(UTC)
    result = asyncio.run(_ask(payload, fixed_now, trace))
    from concerto.contracts.orchestrator import OrchestratorOutput

    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif payload.get("output_format") == "brief" and getattr(result, "answer_values", None) is not None:
        import json

        for value in result.answer_values:  # just the values, one a line (numbers as JSON numbers)
            click.echo(value if isinstance(value, str) else json.dumps(value))
    elif as_yaml:
        from concerto.contracts.handoff import result_yaml
        from concerto.settings import Settings

        settings = Settings()
        model = settings.llm_model if settings.llm_configured else None
        click.echo(result_yaml(result, start_time=started.isoformat(), model_used=model), nl=False)
    else:
        from concerto.cli_render import render_result

        render_result(result)
    sys.exit(0 if isinstance(result, OrchestratorOutput) else 1)


async def _ask(payload: dict[str, Any], now: datetime | None, trace: bool) -> Any:
    from concerto.orchestrator.engine import Orchestrator

    async with Orchestrator() as orchestrator:
        if not trace:  # (with --trace the events say it)
            orchestrator.first_use.notify = lambda line: click.echo(line, err=True)  # "Preparing the demo table…"
            return await orchestrator.ask(payload, now=now)
        from concerto.cli_render import render_event
        from concerto.contracts.events import Event

        result = None
        async for item in orchestrator.stream(payload, now=now):
            if isinstance(item, Event):
                render_event(item)
            else:
                result = item
        return result
