"""`concerto agents`: the loaded agents, and the packs that failed to load."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the agents' declarations as JSON.")
def agents(as_json: bool) -> None:
    """List the agents that are loaded, with what they can answer.

    A pack that failed to load is named on stderr with the reason; the others are listed.

    \b
    Example:
      CONCERTO_AGENTS=city concerto agents --json
    """
    from concerto.agents.loader import load_packs
    from concerto.cli_render import render_agents, render_failures
    from concerto.settings import Settings

    settings = Settings()
    packs = load_packs(settings.agents)
    infos = packs.registry(settings).infos()
    if as_json:
        click.echo(json.dumps([i.model_dump() for i in infos], indent=2))
    else:
        render_agents(infos)
    render_failures(packs.failures)
