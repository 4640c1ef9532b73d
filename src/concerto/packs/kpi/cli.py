"""`concerto kpi ...`: load KPI records from CSV, reload the demo data, ask the store."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import click


def _store():  # type: ignore[no-untyped-def]
    from concerto.packs.kpi.store import KPIStore
    from concerto.resources import Resources
    from concerto.settings import Settings

    settings = Settings()
    return KPIStore(settings, Resources(settings).embedder)


@click.group()
def kpi() -> None:
    """KPI records (000_*.txt): load a CSV, load the demo data, query the store."""


@kpi.command("load")
@click.argument("csv_file", metavar="FILE.csv", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--demo/--no-demo",
    default=False,
    show_default=True,
    help="Also load the demo records if the store is empty.",
)
def load(csv_file: Path, demo: bool) -> None:
    """Validate FILE.csv and add its records to the store.

    Columns: kpi, department, month (YYYY-MM or YYYY-MM-DD), value, unit, notes.
    Every row is checked first: if any row is bad, its line number is reported and
    nothing is written. A record for an existing kpi, department and month replaces it.

    \b
    Example:
      concerto kpi load kpis.csv
    """
    from concerto.packs.kpi.records import CSVError, read_csv

    store = _store()
    if demo:
        store.ensure_demo()
    started = time.perf_counter()
    try:
        records = read_csv(csv_file, known_units=store.catalog().units)
    except CSVError as exc:
        for line, message in exc.errors:
            click.echo(f"{csv_file}:{line}: {message}", err=True)
        if exc.total > len(exc.errors):
            click.echo(f"... {exc.total - len(exc.errors)} more invalid row(s)", err=True)
        raise click.ClickException(f"{exc.total} invalid row(s); nothing was loaded.") from None
    count = store.add(records)
    elapsed = time.perf_counter() - started
    click.echo(
        f"Loaded {count} records from {csv_file} into {store.location} "
        f"in {elapsed:.1f} s ({count / max(elapsed, 1e-9):,.0f} records/s)."
    )


@kpi.command("demo")
def demo() -> None:
    """Load the demo records (7 departments x 8 KPIs x 2023-01..2026-12) into the store.

    Records already present for the same kpi, department and month are replaced.
    """
    from concerto.packs.kpi.demo import demo_records, descriptions

    store = _store()
    count = store.add(demo_records(), descriptions())
    click.echo(f"Loaded {count} demo records into {store.location}.")


@kpi.command("names")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def names(as_json: bool) -> None:
    """List the KPIs (with units) and departments the store holds."""
    store = _store()
    store.ensure_demo()
    catalog = store.catalog()
    data = {"kpis": catalog.units, "departments": catalog.names("department")}
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo("KPIs: " + ", ".join(f"{k} ({u})" for k, u in sorted(catalog.units.items())))
    click.echo("Departments: " + ", ".join(sorted(data["departments"])))


@kpi.command("query")
@click.argument("question")
@click.option("--now", help="Current date-time (ISO 8601) for relative periods such as 'last month'.")
def query(question: str, now: str | None) -> None:
    """Answer QUESTION (agreed format or plain language) and print the agent's JSON output.

    \b
    Examples:
      concerto kpi query "kpi-attrition-rate department-home-loan month-2025-05-01"
      concerto kpi query "home-loan attrition rate previous 4 months" --now 2025-06-15
    """
    import asyncio

    from concerto.agents.base import AgentFailure
    from concerto.packs.kpi.agent import KPIAgent
    from concerto.testing import make_context

    clock = datetime.fromisoformat(now) if now else datetime.now(UTC)
    context = make_context(question, now=clock, agent="kpi")
    agent = KPIAgent(context.settings, context.resources)

    async def answer() -> dict[str, object]:
        payload = await agent.prepare(question, context)
        result = await agent.run(context, payload)
        return {"summary": result.summary, **result.output}

    try:
        click.echo(json.dumps(asyncio.run(answer()), indent=2))
    except AgentFailure as exc:
        click.echo(
            json.dumps(
                {
                    "error_type": exc.error_type,
                    "message": exc.message,
                    "suggestion": exc.suggestion,
                },
                indent=2,
            )
        )
        raise SystemExit(1) from None
