"""`concerto events`: the events stored in the data dir's log."""

from __future__ import annotations

import click


@click.command()
@click.option("--query-id", help="Only this query's events.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000), help="How many.")
def events(query_id: str | None, limit: int) -> None:
    """Show stored events (the database log in the data dir).

    \b
    Example:
      concerto ask "echo: hi" --json | jq -r .query_id | xargs -I{} concerto events --query-id {}
    """
    from concerto.cli_render import render_event
    from concerto.orchestrator.log import EventLog
    from concerto.settings import Settings

    for event in EventLog.of(Settings()).read(query_id, limit):
        render_event(event)
