"""`concerto config`: the effective settings of the core and every pack, secrets masked."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--markdown", is_flag=True, help="Print the settings reference (docs/settings.md's table) instead.")
def config(as_json: bool, markdown: bool) -> None:
    """Print the effective settings of the core and every pack (environment, then concerto.env), secrets masked.

    \b
    Example:
      concerto config --json | jq .prometheus_url
    """
    from concerto.agents.loader import load_packs
    from concerto.settings import Settings, effective, reference

    packs = load_packs()
    sections = packs.settings_sections()
    if markdown:
        click.echo(reference(sections), nl=False)
        return
    values = effective(Settings(), sections)
    if as_json:
        click.echo(json.dumps({k: v for part in values.values() for k, v in part.items()}, indent=2, default=str))
        return
    for owner, part in values.items():
        click.echo(f"# {owner}")
        for key, value in part.items():
            if isinstance(value, dict):  # written as in the environment: name=value,name=value
                value = ",".join(f"{k}={v}" for k, v in value.items())
            click.echo(f"CONCERTO_{key.upper()}={'' if value is None else value}")
